package gguf

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

func FuzzParse(f *testing.F) {
	f.Add(smallImage(f))
	w := NewWriter(2)
	w.SetKV("nested", []any{[]any{[]string{"x"}}, []int8{-1}})
	w.SetAlignment(8)
	f.Add(writeImage(f, w))
	if data, err := os.ReadFile(seedModel("stories260K.gguf")); err == nil {
		f.Add(data[:4096])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.gguf", data)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.gguf") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		exercise(t, file)
		// What parses must survive a rewrite: same metadata, same tensors.
		// (Tensors may overlap in the input; skip rewrites that would pad
		// many of them to a huge alignment.)
		if len(file.Tensors())*file.Alignment > 16<<20 {
			return
		}
		again, err := Parse("again", writeImage(t, NewWriterFrom(file)))
		if err != nil {
			t.Fatalf("rewritten image does not parse: %v", err)
		}
		if !slices.Equal(again.Keys(), file.Keys()) || len(again.Tensors()) != len(file.Tensors()) {
			t.Fatalf("rewrite changed keys or tensor count")
		}
		for _, k := range file.Keys() {
			a, _ := file.Value(k)
			b, _ := again.Value(k)
			if !sameValue(a, b) {
				t.Fatalf("rewrite changed %q: %#v to %#v", k, a, b)
			}
		}
	})
}

// seedModel is the path of a shared model used as an optional fuzz seed.
func seedModel(rel string) string {
	return filepath.Join(testmodels.Lookup(), rel)
}

// smallImage is a small valid file with metadata and tensors of several types.
func smallImage(tb testing.TB) []byte {
	tb.Helper()
	w := NewWriter(3)
	w.SetKV("general.architecture", "llama")
	w.SetKV("llama.block_count", uint32(2))
	w.SetKV("tokenizer.ggml.tokens", []string{"<unk>", "a", "b"})
	w.SetKV("tokenizer.ggml.scores", []float32{0, -1, -2})
	w.SetKV("tokenizer.ggml.token_type", []int32{2, 1, 1})
	w.SetKV("flag", true)
	w.SetKV("eps", 1e-5)
	for _, t := range []struct {
		name  string
		typ   compute.DType
		shape []int
	}{{"a", compute.F32, []int{4, 2}}, {"b", compute.Q8_0, []int{32}}, {"c", compute.F16, []int{3}}} {
		rb, _ := t.typ.RowSize(t.shape[0])
		size := rb
		for _, d := range t.shape[1:] {
			size *= d
		}
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i)
		}
		if err := w.AddTensor(t.name, t.typ, t.shape, data); err != nil {
			tb.Fatal(err)
		}
	}
	return writeImage(tb, w)
}

// exercise checks the invariants of a File that parsed: every tensor's data
// is in range, of its size, aligned; every getter works on every key.
func exercise(tb testing.TB, f *File) {
	tb.Helper()
	if len(f.Keys()) != len(f.SortedKeys()) {
		tb.Errorf("%d keys, %d sorted", len(f.Keys()), len(f.SortedKeys()))
	}
	if f.Alignment <= 0 || f.Alignment&(f.Alignment-1) != 0 {
		tb.Errorf("alignment %d", f.Alignment)
	}
	for _, k := range f.Keys() {
		if _, ok := f.Value(k); !ok {
			tb.Errorf("key %q listed but has no value", k)
		}
		f.String(k)
		f.Bool(k)
		f.Uint(k)
		f.Int(k)
		f.Float(k)
		f.Strings(k)
		f.Float32s(k)
		f.Int32s(k)
	}
	for _, info := range f.Tensors() {
		tn, err := f.Tensor(info.Name)
		if err != nil {
			tb.Fatalf("tensor %q listed but: %v", info.Name, err)
		}
		if !tn.Type.Known() || len(tn.Shape) < 1 || len(tn.Shape) > 4 {
			tb.Fatalf("tensor %q: %s %v", info.Name, tn.Type, tn.Shape)
		}
		if uint64(len(tn.Data)) != info.Size || cap(tn.Data) != len(tn.Data) ||
			len(tn.Data) != tn.Rows()*tn.RowBytes() || info.Offset%uint64(f.Alignment) != 0 {
			tb.Fatalf("tensor %q: %d bytes (cap %d) at %d, want %d = %d rows of %d, aligned to %d",
				info.Name, len(tn.Data), cap(tn.Data), info.Offset, info.Size, tn.Rows(), tn.RowBytes(), f.Alignment)
		}
	}
}
