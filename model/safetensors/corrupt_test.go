package safetensors

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withHeader builds a file from a literal JSON header and n data bytes.
func withHeader(js string, n int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	b = append(b, js...)
	return append(b, make([]byte, n)...)
}

// withLength replaces a file's header length.
func withLength(b []byte, n uint64) []byte {
	b = append([]byte(nil), b...)
	binary.LittleEndian.PutUint64(b, n)
	return b
}

// flip returns b with the bits of mask flipped at offset i.
func flip(b []byte, i int, mask byte) []byte {
	b = append([]byte(nil), b...)
	b[i] ^= mask
	return b
}

func TestOpenCorrupt(t *testing.T) {
	real, err := os.ReadFile(filepath.Join(tinyStoriesDir(t), "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range corruptFileCases(real) {
		t.Run(tt.name, func(t *testing.T) {
			checkOpenCorrupt(t, map[string][]byte{"model.safetensors": tt.file}, tt.want)
		})
	}
	for _, tt := range corruptDirCases(t) {
		t.Run(tt.name, func(t *testing.T) { checkOpenCorrupt(t, tt.files, tt.want) })
	}
}

// corruptFileCases are broken model.safetensors files, alone in their
// directory, made from real (a good file) or written whole.
func corruptFileCases(real []byte) []struct {
	name string
	file []byte
	want string // in the error
} {
	hdrLen := int(binary.LittleEndian.Uint64(real))
	one := func(name, dtype, shape, offsets string) string {
		return `{"` + name + `":{"dtype":"` + dtype + `","shape":` + shape + `,"data_offsets":` + offsets + `}}`
	}
	return []struct {
		name string
		file []byte
		want string // in the error
	}{
		{"empty file", nil, "too short"},
		{"truncated at 4", real[:4], "too short"},
		{"truncated at 7", real[:7], "too short"},
		{"truncated at 8", real[:8], "runs past the end of the file"},
		{"truncated in header", real[:100], "runs past the end of the file"},
		{"truncated before data", real[:8+hdrLen-1], "runs past the end of the file"},
		{"truncated in data", real[:8+hdrLen+1000], "run past the end of the data"},
		{"truncated by one byte", real[:len(real)-1], "run past the end of the data"},
		{"header length 2^63", withLength(real, 1<<63), "exceeds"},
		{"header length 2^64-1", withLength(real, ^uint64(0)), "exceeds"},
		{"header length 200 MB", withLength(real, 200<<20), "exceeds"},
		{"header length = file size", withLength(real, uint64(len(real))), "runs past the end"},
		{"header length too short", withLength(real, uint64(hdrLen-10)), "header"},
		{"flip opening brace", flip(real, 8, 0x01), "not a JSON object"},
		{"flip a quote", flip(real, 9, 0x01), "header"},
		{"flip a shape digit", flipIn(real, `"shape":[2048,128]`, 9, 0x01), "needs"},
		{"flip an offset digit", flipIn(real, `[2623488,2624000]`, 9, 0x04), "run past the end of the data"},
		{"flip the header length", flip(real, 7, 0x80), "exceeds"},
		{"bad JSON", withHeader(`{"a": }`, 0), "header"},
		{"JSON array", withHeader(`[]`, 0), "not a JSON object"},
		{"trailing data", withHeader(`{} {}`, 0), "data after"},
		{"unclosed object", withHeader(`{"__metadata__":{}`, 0), "header"},
		{"entry not an object", withHeader(`{"a": 1}`, 0), `tensor "a"`},
		{"metadata not strings", withHeader(`{"__metadata__":{"x":1}}`, 0), "__metadata__"},
		{"duplicate name", withHeader(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1), "twice"},
		{"empty name", withHeader(one("", "U8", "[1]", "[0,1]"), 1), "empty tensor name"},
		{"offsets past EOF", withHeader(one("a", "F32", "[2]", "[0,8]"), 4), "run past the end of the data"},
		{"offsets huge", withHeader(one("a", "F32", "[2]", "[18446744073709551608,18446744073709551615]"), 8), "run past"},
		{"offsets negative", withHeader(one("a", "F32", "[2]", "[-8,0]"), 8), `tensor "a"`},
		{"begin after end", withHeader(one("a", "F32", "[0]", "[8,0]"), 8), "begin after end"},
		{"three offsets", withHeader(one("a", "F32", "[2]", "[0,4,8]"), 8), "want 2"},
		{"dtype size mismatch", withHeader(one("a", "F16", "[2]", "[0,8]"), 8), "needs 2 × 16 bits"},
		{"shape size mismatch", withHeader(one("a", "F32", "[3]", "[0,8]"), 8), "needs 3 × 32 bits"},
		{"negative dim", withHeader(one("a", "F32", "[-2]", "[0,8]"), 8), "negative dimension"},
		{"shape overflow", withHeader(one("a", "F32", "[4294967296,4294967296]", "[0,8]"), 8), "overflows"},
		{"size overflow", withHeader(one("a", "F64", "[4611686018427387904]", "[0,8]"), 8), "needs"},
		{"fractional dim", withHeader(one("a", "F32", "[1.5]", "[0,8]"), 8), `tensor "a"`},
		{"no dtype", withHeader(`{"a":{"shape":[1],"data_offsets":[0,1]}}`, 1), "no dtype"},
		{"no shape", withHeader(`{"a":{"dtype":"U8","data_offsets":[0,1]}}`, 1), "no shape"},
		{"sub-byte dtype odd count", withHeader(one("a", "F4", "[3]", "[0,2]"), 2), "needs"},
	}
}

// corruptDirCases are directories with broken shards, indexes or configs.
func corruptDirCases(t *testing.T) []struct {
	name  string
	files map[string][]byte
	want  string // in the error
} {
	a := encodeFile(t, []testTensor{{"a", "F32", []int64{2}, u32s(1, 2)}}, nil)
	shardMap := map[string]string{"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}
	return []struct {
		name  string
		files map[string][]byte
		want  string // in the error
	}{
		{"no weights", map[string][]byte{"README.md": []byte("hi")}, "no model.safetensors.index.json"},
		{"missing shard", map[string][]byte{
			"model-00001-of-00002.safetensors": a,
			"model.safetensors.index.json":     indexJSON(t, shardMap),
		}, "missing shard"},
		{"empty shard", map[string][]byte{
			"model-00001-of-00002.safetensors": a,
			"model-00002-of-00002.safetensors": a[:0:0],
			"model.safetensors.index.json":     indexJSON(t, shardMap),
		}, "too short"},
		{"index maps to wrong shard", map[string][]byte{
			"model-00001-of-00002.safetensors": a,
			"model-00002-of-00002.safetensors": encodeFile(t, []testTensor{{"c", "U8", []int64{1}, []byte{1}}}, nil),
			"model.safetensors.index.json":     indexJSON(t, shardMap),
		}, `tensor "b"`},
		{"duplicate across shards", map[string][]byte{
			"model-00001-of-00002.safetensors": a,
			"model-00002-of-00002.safetensors": a,
			"model.safetensors.index.json":     indexJSON(t, map[string]string{"a": "model-00001-of-00002.safetensors", "x": "model-00002-of-00002.safetensors"}),
		}, "in both"},
		{"duplicate without index", map[string][]byte{"x.safetensors": a, "y.safetensors": a}, "in both"},
		{"index escapes directory", map[string][]byte{
			"model.safetensors.index.json": indexJSON(t, map[string]string{"a": "../model.safetensors"}),
		}, "not a file in the directory"},
		{"index bad JSON", map[string][]byte{"model.safetensors.index.json": []byte(`{"weight_map": [`)}, "index.json"},
		{"index without weight_map", map[string][]byte{"model.safetensors.index.json": []byte(`{}`)}, "weight_map"},
		{"bad config", map[string][]byte{"model.safetensors": a, "config.json": []byte(`{"hidden_size": 0}`)}, "hidden_size"},
	}
}

// checkOpenCorrupt writes files to a directory and checks that Open fails
// with an error in the package's words that contains want.
func checkOpenCorrupt(t *testing.T, files map[string][]byte, want string) {
	t.Helper()
	m, err := Open(writeDir(t, files))
	if err == nil {
		m.Close()
		t.Fatalf("Open succeeded, want an error containing %q", want)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to contain %q", err, want)
	}
	if !strings.HasPrefix(err.Error(), "safetensors: ") {
		t.Errorf("err = %v, want the package prefix", err)
	}
}

// flipIn flips mask at byte i of the first occurrence of s in b.
func flipIn(b []byte, s string, i int, mask byte) []byte {
	at := strings.Index(string(b), s)
	if at < 0 {
		panic("flipIn: " + s + " not in the file")
	}
	return flip(b, at+i, mask)
}

// TestHeaderBitFlips flips every bit of the real header and the length and
// checks that parseHeader either fails or returns entries that lie inside
// the file with sizes matching their dtype and shape.
func TestHeaderBitFlips(t *testing.T) {
	real, err := os.ReadFile(filepath.Join(tinyStoriesDir(t), "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	end := 8 + int(binary.LittleEndian.Uint64(real))
	var accepted, rejected int
	step := 1
	if testing.Short() {
		step = 7
	}
	for i := 0; i < end; i += step {
		for bit := range 8 {
			real[i] ^= 1 << bit // in place: copying the 2.6 MB file 17,000 times is slow
			h, err := parseHeader(real)
			if err == nil {
				accepted++
				checkHeaderInvariants(t, real, h)
			} else {
				rejected++
			}
			real[i] ^= 1 << bit
		}
	}
	if rejected == 0 {
		t.Error("no bit flip was rejected")
	}
	t.Logf("%d bit flips rejected, %d accepted (names, metadata, whitespace)", rejected, accepted)
}

// checkHeaderInvariants fails t when an accepted header has an entry that
// lies outside b or whose size disagrees with its dtype and shape.
func checkHeaderInvariants(t testing.TB, b []byte, h *header) {
	t.Helper()
	for name, e := range h.tensors {
		if e.begin > e.end || e.end > uint64(len(b)) || e.begin < 8 {
			t.Fatalf("tensor %q: range [%d, %d] outside a file of %d bytes", name, e.begin, e.end, len(b))
		}
		if bits, ok := dtypeBits[e.dtype]; ok {
			n := bits
			for _, d := range e.shape {
				n *= uint64(d)
			}
			if len(e.shape) < 3 && n/8 != e.end-e.begin { // products of short shapes cannot overflow here
				t.Fatalf("tensor %q: %d bytes for %s %v", name, e.end-e.begin, e.dtype, e.shape)
			}
		}
	}
}
