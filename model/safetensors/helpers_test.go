package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// modelsDir returns the shared test models directory (see internal/testmodels).
func modelsDir(t testing.TB) string { return testmodels.Dir(t) }

// findModelsDir locates the shared models directory without failing.
func findModelsDir() (string, error) {
	dir := testmodels.Lookup()
	_, err := os.Stat(filepath.Join(dir, "tinystories-656k-safetensors", "model.safetensors"))
	return dir, err
}

// tinyStoriesDir is the safetensors copy of TinyStories-656K.
func tinyStoriesDir(t testing.TB) string {
	return filepath.Join(modelsDir(t), "tinystories-656k-safetensors")
}

// testTensor is a tensor to write with encodeFile.
type testTensor struct {
	name  string
	dtype string
	shape []int64
	data  []byte
}

// encodeFile builds a .safetensors file holding tensors in the given order
// (no alignment padding between them) and metadata, with the header padded
// with spaces to a multiple of 8 bytes as the safetensors library does.
func encodeFile(t testing.TB, tensors []testTensor, meta map[string]string) []byte {
	t.Helper()
	hdr := map[string]any{}
	if meta != nil {
		hdr["__metadata__"] = meta
	}
	var off int
	for _, tt := range tensors {
		hdr[tt.name] = map[string]any{
			"dtype":        tt.dtype,
			"shape":        tt.shape,
			"data_offsets": []int{off, off + len(tt.data)},
		}
		off += len(tt.data)
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	if pad := len(js) % 8; pad != 0 {
		js = append(js, strings.Repeat(" ", 8-pad)...)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	out = append(out, js...)
	for _, tt := range tensors {
		out = append(out, tt.data...)
	}
	return out
}

// rawHeader is a header as the tests read it, independently of parseHeader.
type rawHeader struct {
	meta    map[string]string
	tensors []testTensor // in file order
}

// decodeFile splits a well-formed .safetensors file into its tensors.
func decodeFile(t testing.TB, b []byte) rawHeader {
	t.Helper()
	n := binary.LittleEndian.Uint64(b)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var rh rawHeader
	type info struct {
		DType       string  `json:"dtype"`
		Shape       []int64 `json:"shape"`
		DataOffsets [2]int  `json:"data_offsets"`
	}
	for name, raw := range hdr {
		if name == "__metadata__" {
			if err := json.Unmarshal(raw, &rh.meta); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var in info
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		data := b[8+int(n)+in.DataOffsets[0] : 8+int(n)+in.DataOffsets[1]]
		rh.tensors = append(rh.tensors, testTensor{name: name, dtype: in.DType, shape: in.Shape, data: data})
	}
	return rh
}

// writeDir writes files (name -> contents) into a fresh temporary directory.
func writeDir(t testing.TB, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// indexJSON builds a model.safetensors.index.json for weightMap.
func indexJSON(t testing.TB, weightMap map[string]string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func u16s(vs ...uint16) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

func u32s(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}
