package gguf

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// sharedGGUFs lists stories260K, TinyStories-656K and the synthetic, synthetic-more and vocab files.
func sharedGGUFs(tb testing.TB) []string {
	tb.Helper()
	paths := []string{testmodels.Path(tb, "stories260K.gguf"), testmodels.Path(tb, "TinyStories-656K-Q8_0.gguf")}
	for _, pattern := range []string{"synthetic/*.gguf", "synthetic-more/*.gguf", "vocab/*.gguf"} {
		m, err := filepath.Glob(filepath.Join(testmodels.Path(tb, filepath.Dir(pattern)), filepath.Base(pattern)))
		if err != nil || len(m) == 0 {
			tb.Fatalf("no files match %s: %v", pattern, err)
		}
		paths = append(paths, m...)
	}
	return paths
}

// openFile opens the GGUF file at path, closed when the test ends.
func openFile(t testing.TB, path string) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestStories260K(t *testing.T) {
	path := testmodels.Path(t, "stories260K.gguf")
	f := openFile(t, path)
	if f.Version != 3 || len(f.Tensors()) != 48 || f.Alignment != 32 {
		t.Errorf("version %d, %d tensors, alignment %d; want 3, 48, 32", f.Version, len(f.Tensors()), f.Alignment)
	}
	if n, ok := f.Uint("llama.block_count"); !ok || n != 5 {
		t.Errorf("llama.block_count = %d, %v", n, ok)
	}
	if a, _ := f.String("general.architecture"); a != "llama" {
		t.Errorf("general.architecture = %q", a)
	}
	if eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || math.Abs(eps-1e-5) > 1e-12 {
		t.Errorf("rms epsilon = %g, %v", eps, ok)
	}
	if tok, ok := f.Strings("tokenizer.ggml.tokens"); !ok || len(tok) != 512 || tok[3] != "<0x00>" {
		t.Errorf("tokens: %d, ok %v", len(tok), ok)
	}
	if sc, ok := f.Float32s("tokenizer.ggml.scores"); !ok || len(sc) != 512 {
		t.Errorf("scores: %d, ok %v", len(sc), ok)
	}
	if tt, ok := f.Int32s("tokenizer.ggml.token_type"); !ok || len(tt) != 512 || tt[0] != 2 || tt[3] != 6 {
		t.Errorf("token types: %v, ok %v", tt[:4], ok)
	}
	emb, err := f.Tensor("token_embd.weight")
	if err != nil {
		t.Fatal(err)
	}
	if emb.Type != compute.F32 || !slices.Equal(emb.Shape, []int{64, 512}) || len(emb.Data) != 64*512*4 {
		t.Errorf("token_embd.weight: %s %v, %d bytes", emb.Type, emb.Shape, len(emb.Data))
	}
	// The llama2.c checkpoint of the same model starts with a 7-int32 header,
	// then the embedding table.
	bin, err := os.ReadFile(testmodels.Path(t, "llama2c/stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(emb.Data, bin[28:28+len(emb.Data)]) {
		t.Error("token_embd.weight differs from the llama2.c checkpoint's embedding")
	}
	if _, err := f.Tensor("no.such.tensor"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing tensor: %v, want ErrNotFound", err)
	}
}

func TestOpenSharedFiles(t *testing.T) {
	for _, path := range sharedGGUFs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f := openFile(t, path)
			if _, ok := f.String("general.architecture"); !ok {
				t.Error("no general.architecture")
			}
			if tok, ok := f.Strings("tokenizer.ggml.tokens"); !ok || len(tok) == 0 {
				t.Error("no tokenizer.ggml.tokens")
			}
			exercise(t, f)
			if err := f.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

func TestParseMatchesOpen(t *testing.T) {
	path := testmodels.Path(t, "synthetic/synth-llama-tiny256-Q4_K_M.gguf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if !slices.Equal(p.Keys(), o.Keys()) || !slices.EqualFunc(p.Tensors(), o.Tensors(), func(a, b TensorInfo) bool {
		return a.Name == b.Name && a.Type == b.Type && slices.Equal(a.Shape, b.Shape) && a.Offset == b.Offset && a.Size == b.Size
	}) {
		t.Fatal("Parse and Open disagree")
	}
	types := map[compute.DType]bool{}
	for _, info := range o.Tensors() {
		types[info.Type] = true
		a, _ := p.Tensor(info.Name)
		b, _ := o.Tensor(info.Name)
		if !bytes.Equal(a.Data, b.Data) {
			t.Errorf("tensor %q data differs", info.Name)
		}
	}
	if !types[compute.Q4_K] || !types[compute.Q6_K] || !types[compute.F32] {
		t.Errorf("types %v, want Q4_K, Q6_K and F32", types)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close of a parsed image: %v", err)
	}
}

func TestGetters(t *testing.T) {
	w := NewWriter(3)
	for _, p := range allValues {
		w.SetKV(p.key, p.value)
	}
	w.SetKV("u64.big", uint64(math.MaxInt64)+1)
	w.SetKV("i32.neg", int32(-5))
	w.SetKV("arr.i64.big", []int64{1 << 40})
	f, err := Parse("mem", writeImage(t, w))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		get  func() (any, bool)
		want any // nil: not ok
	}{
		{"Uint u8", func() (any, bool) { return f.Uint("u8") }, uint64(0xfe)},
		{"Uint u64", func() (any, bool) { return f.Uint("u64") }, uint64(math.MaxUint64)},
		{"Uint negative", func() (any, bool) { return f.Uint("i32.neg") }, nil},
		{"Uint of string", func() (any, bool) { return f.Uint("str") }, nil},
		{"Uint missing", func() (any, bool) { return f.Uint("nope") }, nil},
		{"Int i8", func() (any, bool) { return f.Int("i8") }, int64(-128)},
		{"Int u32", func() (any, bool) { return f.Int("u32") }, int64(0xfffffffe)},
		{"Int i64", func() (any, bool) { return f.Int("i64") }, int64(math.MinInt64)},
		{"Int u64 too big", func() (any, bool) { return f.Int("u64.big") }, nil},
		{"Int of float", func() (any, bool) { return f.Int("f32") }, nil},
		{"Float f32", func() (any, bool) { return f.Float("f32") }, float64(float32(-1.5e-39))},
		{"Float f64", func() (any, bool) { return f.Float("f64") }, math.Inf(-1)},
		{"Float of int", func() (any, bool) { return f.Float("i16") }, float64(-32768)},
		// values.go says integer values convert; a uint64 above MaxInt64 does not yet.
		{"Float of u64 above MaxInt64", func() (any, bool) { return f.Float("u64.big") }, float64(1 << 63)},
		{"Float of bool", func() (any, bool) { return f.Float("bool.true") }, nil},
		{"Bool", func() (any, bool) { return f.Bool("bool.false") }, false},
		{"Bool of u8", func() (any, bool) { return f.Bool("u8") }, nil},
		{"String empty", func() (any, bool) { return f.String("str.empty") }, ""},
		{"String unicode key", func() (any, bool) { return f.String("ключ.日本") }, "unicode key"},
		{"String empty key", func() (any, bool) { return f.String("") }, "empty key"},
		{"Strings", func() (any, bool) { return f.Strings("arr.str") }, []string{"a", "", "ü"}},
		{"Strings empty", func() (any, bool) { return f.Strings("arr.empty.str") }, []string{}},
		{"Strings of string", func() (any, bool) { return f.Strings("str") }, nil},
		{"Float32s", func() (any, bool) { return f.Float32s("arr.f32") }, []float32{0.5, float32(math.Inf(1))}},
		{"Float32s of f64", func() (any, bool) { return f.Float32s("arr.f64") }, []float32{-0.25}},
		{"Float32s of i32", func() (any, bool) { return f.Float32s("arr.i32") }, nil},
		{"Int32s i32", func() (any, bool) { return f.Int32s("arr.i32") }, []int32{-1, 1, math.MaxInt32}},
		{"Int32s u8", func() (any, bool) { return f.Int32s("arr.u8") }, []int32{0, 1, 255}},
		{"Int32s i8", func() (any, bool) { return f.Int32s("arr.i8") }, []int32{-1, 0, 127}},
		{"Int32s u16", func() (any, bool) { return f.Int32s("arr.u16") }, []int32{1, 65535}},
		{"Int32s i16", func() (any, bool) { return f.Int32s("arr.i16") }, []int32{-2, 2}},
		{"Int32s u32 too big", func() (any, bool) { return f.Int32s("arr.u32") }, nil},
		{"Int32s u64 too big", func() (any, bool) { return f.Int32s("arr.u64") }, nil},
		{"Int32s i64 too big", func() (any, bool) { return f.Int32s("arr.i64.big") }, nil},
		{"Int32s empty", func() (any, bool) { return f.Int32s("arr.empty.i32") }, []int32{}},
		{"Int32s of bools", func() (any, bool) { return f.Int32s("arr.bool") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.get()
			if tt.want == nil {
				if ok {
					t.Errorf("got %#v, want not ok", got)
				}
				return
			}
			if !ok || !sameValue(got, tt.want) {
				t.Errorf("got %#v, %v; want %#v", got, ok, tt.want)
			}
		})
	}
	if sorted := f.SortedKeys(); !slices.IsSorted(sorted) || len(sorted) != len(f.Keys()) {
		t.Errorf("SortedKeys %q", sorted)
	}
}

// BenchmarkOpen opens (maps and parses) the largest shared GGUF.
func BenchmarkOpen(b *testing.B) {
	var path string
	var size int64
	for _, p := range sharedGGUFs(b) {
		if st, err := os.Stat(p); err == nil && st.Size() > size {
			path, size = p, st.Size()
		}
	}
	b.Logf("%s, %d bytes", filepath.Base(path), size)
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// TestDropPages drops the pages of every tensor of a real file and checks
// that the data reads back the same (from the file) afterwards, and that
// slices outside the mapping are ignored.
func TestDropPages(t *testing.T) {
	f := openFile(t, testmodels.Path(t, "stories260K.gguf"))
	for _, ti := range f.Tensors() {
		tt, err := f.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		before := append([]byte(nil), tt.Data...)
		f.DropPages(tt.Data)
		if !bytes.Equal(before, tt.Data) {
			t.Fatalf("%s: data changed after DropPages", ti.Name)
		}
	}
	f.DropPages(make([]byte, 1<<16)) // not in the mapping: ignored
	f.DropPages(nil)
}
