package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// safeParse parses data, turning a panic or a parse that takes over 10 s into
// a test failure.
func safeParse(t *testing.T, name string, data []byte) (*File, error) {
	t.Helper()
	type result struct {
		f     *File
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{panic: p}
			}
		}()
		f, err := Parse(name, data)
		done <- result{f: f, err: err}
	}()
	select {
	case r := <-done:
		if r.panic != nil {
			t.Fatalf("%s: Parse panicked: %v", name, r.panic)
		}
		if (r.f == nil) == (r.err == nil) {
			t.Fatalf("%s: Parse returned %v and %v", name, r.f, r.err)
		}
		return r.f, r.err
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: Parse did not return in 60 s", name)
		return nil, nil
	}
}

// testImage returns smallImage for "small.gguf", else a shared model's path
// and bytes.
func testImage(t *testing.T, rel string) (string, []byte) {
	t.Helper()
	if rel == "small.gguf" {
		return rel, smallImage(t)
	}
	path := testmodels.Path(t, rel)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// cutPoints returns every offset in the first 2 KB, 200 spread over the
// file, and the last few bytes.
func cutPoints(size int) []int {
	seen := map[int]bool{}
	var cuts []int
	add := func(c int) {
		if c >= 0 && c <= size && !seen[c] {
			seen[c] = true
			cuts = append(cuts, c)
		}
	}
	for c := range min(2048, size) {
		add(c)
	}
	for i := range 201 {
		add(size * i / 200)
	}
	for c := size - 40; c <= size; c++ {
		add(c)
	}
	return cuts
}

func TestTruncated(t *testing.T) {
	for _, rel := range []string{"small.gguf", "stories260K.gguf", "synthetic/synth-llama-tiny256-Q4_K_M.gguf", "vocab/ggml-vocab-phi-3.gguf"} {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			path, data := testImage(t, rel)
			whole, err := Parse(path, data)
			if err != nil {
				t.Fatal(err)
			}
			// The file is whole once the last tensor's data is there (its
			// padding may go); a file without tensors needs every byte.
			need := len(data)
			if ts := whole.Tensors(); len(ts) > 0 {
				need = 0
				for _, info := range ts {
					need = max(need, whole.dataOff+int(info.Offset+info.Size))
				}
			}
			cuts := cutPoints(len(data))
			if path == "small.gguf" {
				cuts = nil
				for c := range len(data) + 1 {
					cuts = append(cuts, c)
				}
			}
			errs := 0
			for _, cut := range cuts {
				f, err := safeParse(t, path, data[:cut:cut])
				switch {
				case cut >= need && err != nil:
					t.Errorf("cut at %d of %d (whole from %d): %v", cut, len(data), need, err)
				case cut < need && err == nil:
					t.Errorf("cut at %d of %d (whole from %d): no error", cut, len(data), need)
				case err != nil:
					errs++
					msg := err.Error()
					if !errors.Is(err, ErrCorrupt) || !strings.Contains(msg, path) ||
						!(strings.Contains(msg, "truncated") || strings.Contains(msg, "past the end")) {
						t.Errorf("cut at %d: error %q should wrap ErrCorrupt, name %s and say the file is truncated", cut, msg, path)
					}
				default:
					exercise(t, f)
				}
			}
			t.Logf("%d cuts, %d errors", len(cuts), errs)
		})
	}
}

// TestTruncatedOpen checks Open names the path of a file cut in its data.
func TestTruncatedOpen(t *testing.T) {
	data := smallImage(t)
	path := filepath.Join(t.TempDir(), "cut.gguf")
	if err := os.WriteFile(path, data[:len(data)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("Open of a truncated file: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.gguf")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("Open of an empty file: %v", err)
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Open of a directory: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "absent.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v", err)
	}
}

// TestBitFlips flips 1 to 4 random bits in the header region (everything
// before the tensor data) of 500 copies; each must parse or fail cleanly.
func TestBitFlips(t *testing.T) {
	for _, rel := range []string{"small.gguf", "stories260K.gguf", "synthetic/synth-llama-tiny256-Q4_K_M.gguf"} {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			path, data := testImage(t, rel)
			whole, err := Parse(path, data)
			if err != nil {
				t.Fatal(err)
			}
			header := whole.dataOff
			rng := rand.New(rand.NewPCG(42, uint64(len(data))))
			buf := bytes.Clone(data)
			ok := 0
			for v := range 500 {
				var flipped []int
				for range 1 + rng.IntN(4) {
					bit := rng.IntN(header * 8)
					buf[bit/8] ^= 1 << (bit % 8)
					flipped = append(flipped, bit)
				}
				f, err := safeParse(t, fmt.Sprintf("%s variant %d bits %v", path, v, flipped), buf)
				if err == nil {
					ok++
					exercise(t, f)
				} else if !strings.Contains(err.Error(), path) {
					t.Errorf("variant %d: error does not name the file: %v", v, err)
				}
				for _, bit := range flipped {
					buf[bit/8] ^= 1 << (bit % 8)
				}
			}
			t.Logf("500 variants of a %d-byte header: %d parse, %d fail", header, ok, 500-ok)
		})
	}
}

// base is the image the crafted cases patch: known keys and two tensors.
func baseImage(t *testing.T) []byte {
	t.Helper()
	w := NewWriter(3)
	w.SetKV("test.bool", true)
	w.SetKV("test.str", "hello")
	w.SetKV("test.arr", []int32{1, 2, 3})
	w.SetKV("test.bools", []bool{true, false})
	w.SetKV("test.nested", []any{[]string{"x"}})
	w.SetKV("dup.a", uint32(1))
	w.SetKV("dup.b", uint32(2))
	w.SetAlignment(32)
	if err := w.AddTensor("t.a", compute.F32, []int{8}, make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("t.b", compute.F32, []int{8, 2}, make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	return writeImage(t, w)
}

// after returns the offset just past the length-prefixed string s.
func after(t *testing.T, img []byte, s string) int {
	t.Helper()
	enc := binary.LittleEndian.AppendUint64(nil, uint64(len(s)))
	enc = append(enc, s...)
	i := bytes.Index(img, enc)
	if i < 0 || bytes.Index(img[i+1:], enc) >= 0 {
		t.Fatalf("string %q not found once in the image", s)
	}
	return i + len(enc)
}

func put32(b []byte, at int, v uint32) { binary.LittleEndian.PutUint32(b[at:], v) }
func put64(b []byte, at int, v uint64) { binary.LittleEndian.PutUint64(b[at:], v) }

// set8, set32 and set64 are the patches that write v (a byte, a
// little-endian uint32 or uint64) off bytes past the string s (after).
func set8(s string, off int, v byte) func(*testing.T, []byte) []byte {
	return func(t *testing.T, img []byte) []byte { img[after(t, img, s)+off] = v; return img }
}

func set32(s string, off int, v uint32) func(*testing.T, []byte) []byte {
	return func(t *testing.T, img []byte) []byte { put32(img, after(t, img, s)+off, v); return img }
}

func set64(s string, off int, v uint64) func(*testing.T, []byte) []byte {
	return func(t *testing.T, img []byte) []byte { put64(img, after(t, img, s)+off, v); return img }
}

func TestCrafted(t *testing.T) {
	deep := []any{[]string{"bottom"}}
	for range 99 {
		deep = []any{deep}
	}
	wDeep := NewWriter(3)
	wDeep.SetKV("deep", deep)
	deepImg := writeImage(t, wDeep)
	for _, tt := range slices.Concat(craftedHeaderCases(deepImg), craftedTensorCases()) {
		t.Run(tt.name, func(t *testing.T) { checkCrafted(t, tt) })
	}
}

// craftedCase is the base image patched, and what parsing it says.
type craftedCase struct {
	name  string
	patch func(t *testing.T, img []byte) []byte
	want  string // "" means the file must parse
}

// craftedHeaderCases break the header and the metadata (deepImg: an image
// whose arrays nest 100 deep).
func craftedHeaderCases(deepImg []byte) []craftedCase {
	return []craftedCase{
		{"control", func(t *testing.T, img []byte) []byte { return img }, ""},
		{"empty", func(t *testing.T, img []byte) []byte { return nil }, "magic: need 4 bytes, 0 left"},
		{"wrong magic", func(t *testing.T, img []byte) []byte { copy(img, "GGML"); return img }, "not a GGUF file"},
		{"version 1", func(t *testing.T, img []byte) []byte { put32(img, 4, 1); return img }, "unsupported version 1"},
		{"version 4", func(t *testing.T, img []byte) []byte { put32(img, 4, 4); return img }, "unsupported version 4"},
		{"big-endian version", func(t *testing.T, img []byte) []byte { put32(img, 4, 3<<24); return img }, "unsupported version 50331648"},
		{"tensor count 2^40", func(t *testing.T, img []byte) []byte { put64(img, 8, 1<<40); return img }, "tensor count: 1099511627776 exceeds"},
		{"tensor count one more", func(t *testing.T, img []byte) []byte { put64(img, 8, 3); return img }, `tensor "" has 0 dimensions`},
		{"metadata count 2^40", func(t *testing.T, img []byte) []byte { put64(img, 16, 1<<40); return img }, "metadata count"},
		{"key length 2^60", func(t *testing.T, img []byte) []byte { put64(img, 24, 1<<60); return img }, "key length: 1152921504606846976 exceeds"},
		{"string length 2^60", set64("test.str", 4, 1<<60), `metadata "test.str": corrupt gguf: at byte 74: string length: 1152921504606846976 exceeds the limit`},
		{"string length past EOF", set64("test.str", 4, 1<<20), "string: need 1048576 bytes"},
		{"array length huge", set64("test.arr", 8, 1<<62), "array length: 4611686018427387904 exceeds"},
		{"array length past EOF", set64("test.arr", 8, 1<<27), "array of 134217728 4-byte values runs past the end"},
		{"string array past EOF", set64("test.nested", 20, 1<<27), "array of 134217728 strings runs past the end"},
		{"array of arrays past EOF", set64("test.nested", 8, 1<<27), "array of 134217728 arrays runs past the end"},
		{"nested depth 100", func(t *testing.T, img []byte) []byte { return bytes.Clone(deepImg) }, "arrays nested deeper than 8"},
		{"unknown value type", set32("test.bool", 0, 13), "unknown value type 13"},
		{"unknown array element type", set32("test.arr", 4, 99), "unknown array element type 99"},
		{"bool value 2", set8("test.bool", 4, 2), "bool value 2"},
		{"bool array value 2", set8("test.bools", 4+4+8+1, 2), "bool value 2"},
		{"duplicate key", set8("dup.b", -1, 'a'), `duplicate metadata key "dup.a"`},
		{"alignment 48", set32("general.alignment", 4, 48), "general.alignment 48 is not a power of two"},
		{"alignment 0", set32("general.alignment", 4, 0), "general.alignment 0 is not a power of two"},
		{"alignment 2^31", set32("general.alignment", 4, 1<<31), "general.alignment 2147483648"},
	}
}

// craftedTensorCases break the tensor infos.
func craftedTensorCases() []craftedCase {
	// Offsets in the base image: a tensor info is name, dims (u32), each
	// dim (u64), type (u32), offset (u64); the type of one of nd dims is
	// typeOff(nd) past its name.
	typeOff := func(nd int) int { return 4 + 8*nd }
	return []craftedCase{
		{"tensor name length 2^60", set64("t.a", -3-8, 1<<60), "tensor name length: 1152921504606846976 exceeds"},
		{"0 dims", set32("t.a", 0, 0), `tensor "t.a" has 0 dimensions`},
		{"5 dims", set32("t.a", 0, 5), `tensor "t.a" has 5 dimensions`},
		{"2^32-1 dims", set32("t.a", 0, 1<<32-1), `tensor "t.a" has 4294967295 dimensions`},
		{"zero dim", set64("t.b", 4+8, 0), `tensor "t.b": dimension 1 is 0`},
		{"dim 2^41", set64("t.b", 4, 1<<41), `tensor "t.b": dimension 0 is 2199023255552`},
		{"elements overflow", func(t *testing.T, img []byte) []byte {
			put64(img, after(t, img, "t.b")+4, 1<<32)
			put64(img, after(t, img, "t.b")+4+8, 1<<32)
			return img
		}, `tensor "t.b": dimension 1 is 4294967296`},
		{"unknown tensor type", set32("t.a", typeOff(1), 99), `tensor "t.a" has unsupported type 99`},
		{"row not whole blocks", set32("t.a", typeOff(1), uint32(compute.Q4_0)), "row of 8 values is not a multiple of the block size 32"},
		{"duplicate tensor", set8("t.b", -1, 'a'), `duplicate tensor "t.a"`},
		{"offset unaligned", set64("t.b", typeOff(2)+4, 33), `tensor "t.b" offset 33 is not aligned to 32`},
		{"offset past EOF", set64("t.b", typeOff(2)+4, 1<<40), `tensor "t.b" (64 bytes at data offset 1099511627776) runs past the end of the file`},
		{"offset 2^64-32", set64("t.b", typeOff(2)+4, 1<<64-32), `tensor "t.b" (64 bytes at data offset 18446744073709551584) runs past the end`},
		{"tensor overlapping the end", set64("t.b", typeOff(2)+4, 64), `tensor "t.b" (64 bytes at data offset 64) runs past the end of the file (96 data bytes; truncated?)`},
	}
}

// checkCrafted parses tt's image: it must parse (and be usable), or fail
// with an error naming the file, saying tt.want and wrapping ErrCorrupt.
func checkCrafted(t *testing.T, tt craftedCase) {
	img := tt.patch(t, baseImage(t))
	f, err := safeParse(t, "crafted.gguf", img)
	if tt.want == "" {
		if err != nil {
			t.Fatal(err)
		}
		exercise(t, f)
		return
	}
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", tt.want)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "gguf: crafted.gguf: ") || !strings.Contains(msg, tt.want) {
		t.Errorf("error %q, want one naming the file and mentioning %q", msg, tt.want)
	}
	if !errors.Is(err, ErrCorrupt) && !strings.Contains(tt.name, "version") {
		t.Errorf("error %q does not wrap ErrCorrupt", msg)
	}
}
