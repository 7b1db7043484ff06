package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

type kv struct {
	key   string
	value any
}

type tensorSpec struct {
	name  string
	typ   compute.DType
	shape []int
}

// allValues holds one metadata value of every type the reader returns.
var allValues = []kv{
	{"u8", uint8(0xfe)},
	{"i8", int8(-128)},
	{"u16", uint16(0xfffe)},
	{"i16", int16(-32768)},
	{"u32", uint32(0xfffffffe)},
	{"i32", int32(math.MinInt32)},
	{"u64", uint64(math.MaxUint64)},
	{"i64", int64(math.MinInt64)},
	{"f32", float32(-1.5e-39)}, // subnormal
	{"f64", math.Inf(-1)},
	{"f32.negzero", float32(math.Copysign(0, -1))},
	{"f64.nan", math.NaN()},
	{"bool.true", true},
	{"bool.false", false},
	{"str", "hello"},
	{"str.empty", ""},
	{"str.unicode", "▁Once 字 \x00 🦙"},
	{"arr.u8", []uint8{0, 1, 255}},
	{"arr.i8", []int8{-1, 0, 127}},
	{"arr.u16", []uint16{1, 65535}},
	{"arr.i16", []int16{-2, 2}},
	{"arr.u32", []uint32{7, 1 << 31}},
	{"arr.i32", []int32{-1, 1, math.MaxInt32}},
	{"arr.u64", []uint64{1 << 63}},
	{"arr.i64", []int64{-1 << 62}},
	{"arr.f32", []float32{0.5, float32(math.Inf(1))}},
	{"arr.f64", []float64{-0.25}},
	{"arr.bool", []bool{true, false, true}},
	{"arr.str", []string{"a", "", "ü"}},
	{"arr.empty.u8", []uint8{}},
	{"arr.empty.i32", []int32{}},
	{"arr.empty.str", []string{}},
	{"arr.empty.bool", []bool{}},
	{"arr.arr.str", []any{[]string{"a b", "c"}, []string{}, []string{"é"}}},
	{"arr.arr.mixed", []any{[]int32{1}, []float32{2}, []any{[]bool{true}}}},
	{"arr.arr.empty", []any{}},
	{"ключ.日本", "unicode key"},
	{"", "empty key"},
}

func TestWriterRoundTrip(t *testing.T) {
	threeTypes := []tensorSpec{
		{"f32", compute.F32, []int{4, 3}},
		{"f16", compute.F16, []int{8}},
		{"bf16", compute.BF16, []int{2, 2, 2, 2}},
		{"q4_0", compute.Q4_0, []int{64, 2}},
		{"q8_0", compute.Q8_0, []int{32, 1, 3}},
		{"q4_k", compute.Q4_K, []int{256, 2}},
		{"q6_k", compute.Q6_K, []int{512}},
		{"q2_k", compute.Q2_K, []int{256}},
	}
	tests := []struct {
		name      string
		version   uint32
		alignment int // 0: default
		kvs       []kv
		tensors   []tensorSpec
	}{
		{"v3 every type", 3, 0, allValues, threeTypes},
		{"v2 every type", 2, 0, allValues, threeTypes},
		{"alignment 64", 3, 64, allValues[:3], threeTypes},
		{"alignment 1", 3, 1, nil, threeTypes},
		{"alignment 4096", 2, 4096, nil, threeTypes[:2]},
		{"vocab only", 3, 0, []kv{{"tokenizer.ggml.tokens", []string{"<unk>", "▁a"}}}, nil},
		{"empty", 3, 0, nil, nil},
		{"tensors only", 3, 0, nil, threeTypes[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriter(tt.version)
			wantKeys := []string{}
			for _, p := range tt.kvs {
				w.SetKV(p.key, p.value)
				wantKeys = append(wantKeys, p.key)
			}
			wantAlign := 32
			if tt.alignment != 0 {
				w.SetAlignment(tt.alignment)
				wantKeys = append(wantKeys, "general.alignment")
				wantAlign = tt.alignment
			}
			rng := rand.New(rand.NewPCG(1, 2))
			data := map[string][]byte{}
			for _, ts := range tt.tensors {
				b := randomTensor(t, rng, ts.typ, ts.shape)
				data[ts.name] = b
				if err := w.AddTensor(ts.name, ts.typ, ts.shape, b); err != nil {
					t.Fatal(err)
				}
			}
			img := writeImage(t, w)

			f, err := Parse("mem.gguf", img)
			if err != nil {
				t.Fatal(err)
			}
			if f.Version != tt.version || f.Alignment != wantAlign {
				t.Errorf("version %d alignment %d, want %d %d", f.Version, f.Alignment, tt.version, wantAlign)
			}
			if got := f.Keys(); !slices.Equal(got, wantKeys) {
				t.Errorf("keys %q, want %q", got, wantKeys)
			}
			for _, p := range tt.kvs {
				got, ok := f.Value(p.key)
				if !ok || !sameValue(got, p.value) {
					t.Errorf("%q = %#v, want %#v", p.key, got, p.value)
				}
			}
			if len(f.Tensors()) != len(tt.tensors) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors()), len(tt.tensors))
			}
			for i, ts := range tt.tensors {
				info := f.Tensors()[i]
				if info.Name != ts.name || info.Type != ts.typ || !slices.Equal(info.Shape, ts.shape) {
					t.Errorf("tensor %d = %s %s %v, want %s %s %v", i, info.Name, info.Type, info.Shape, ts.name, ts.typ, ts.shape)
				}
				if info.Offset%uint64(wantAlign) != 0 || (f.dataOff)%wantAlign != 0 {
					t.Errorf("tensor %q at data offset %d (data section %d), not aligned to %d", ts.name, info.Offset, f.dataOff, wantAlign)
				}
				tn, err := f.Tensor(ts.name)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(tn.Data, data[ts.name]) {
					t.Errorf("tensor %q data differs", ts.name)
				}
			}
			// ggml pads every tensor, the last one included; a file without
			// tensors ends right after the tensor infos.
			if len(tt.tensors) > 0 && len(img)%wantAlign != 0 {
				t.Errorf("image of %d bytes is not padded to %d", len(img), wantAlign)
			}
			if len(tt.tensors) == 0 && f.dataOff < len(img) {
				t.Errorf("vocab-only image has %d bytes after the header at %d", len(img)-f.dataOff, f.dataOff)
			}
		})
	}
}

// randomTensor returns random bytes of the size of a typ tensor of shape.
func randomTensor(t *testing.T, rng *rand.Rand, typ compute.DType, shape []int) []byte {
	t.Helper()
	rowBytes, err := typ.RowSize(shape[0])
	if err != nil {
		t.Fatal(err)
	}
	n := rowBytes
	for _, d := range shape[1:] {
		n *= d
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func writeImage(t testing.TB, w *Writer) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d bytes", n, buf.Len())
	}
	return buf.Bytes()
}

// sameValue compares metadata values by type and representation, so NaN
// equals NaN and -0 differs from 0.
func sameValue(a, b any) bool { return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b) }

func TestWriterHeaderBytes(t *testing.T) {
	w := NewWriter(3)
	w.SetKV("k", uint8(7))
	got := writeImage(t, w)
	want := []byte{
		'G', 'G', 'U', 'F', 3, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, // tensors
		1, 0, 0, 0, 0, 0, 0, 0, // kv
		1, 0, 0, 0, 0, 0, 0, 0, 'k', // key
		0, 0, 0, 0, 7, // uint8 7
	}
	if !bytes.Equal(got, want) {
		t.Errorf("image\n% x\nwant\n% x", got, want)
	}
}

func TestWriterSetKVReplaces(t *testing.T) {
	w := NewWriter(3)
	w.SetKV("a", uint32(1))
	w.SetKV("b", "x")
	w.SetKV("a", "now a string")
	f, err := Parse("mem", writeImage(t, w))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Keys(), []string{"a", "b"}) {
		t.Errorf("keys %q", f.Keys())
	}
	if s, _ := f.String("a"); s != "now a string" {
		t.Errorf("a = %q", s)
	}
}

// TestWriterStreams checks AddTensorFunc data arrives in order, written in
// pieces, next to AddTensor data.
func TestWriterStreams(t *testing.T) {
	w := NewWriter(3)
	want := make([]byte, 4*1000)
	for i := range want {
		want[i] = byte(i * 7)
	}
	err := w.AddTensorFunc("streamed", compute.F32, []int{10, 100}, func(out io.Writer) error {
		for row := range 100 {
			if _, err := out.Write(want[row*40 : (row+1)*40]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("small", compute.F16, []int{3}, []byte{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	f, err := Parse("mem", writeImage(t, w))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"streamed": want, "small": {1, 2, 3, 4, 5, 6}} {
		tn, err := f.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(tn.Data, data) {
			t.Errorf("tensor %q data differs", name)
		}
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.after {
		n := f.after
		f.after = 0
		return n, errors.New("disk full")
	}
	f.after -= len(p)
	return len(p), nil
}

func TestWriterErrors(t *testing.T) {
	f32 := make([]byte, 16)
	tests := []struct {
		name  string
		build func(w *Writer) error // error from AddTensor*, else WriteTo's
		want  string
	}{
		{"version 1", func(w *Writer) error { *w = *NewWriter(1); return nil }, "version 1"},
		{"int value", func(w *Writer) error { w.SetKV("n", 3); return nil }, `"n": unsupported value type int`},
		{"map value", func(w *Writer) error { w.SetKV("m", map[string]int{}); return nil }, "unsupported value type map"},
		{"array of scalars as []any", func(w *Writer) error { w.SetKV("a", []any{uint8(1)}); return nil }, "element 0 of an array of arrays is a uint8"},
		{"alignment 48", func(w *Writer) error { w.SetAlignment(48); return nil }, "alignment 48"},
		{"alignment 0", func(w *Writer) error { w.SetAlignment(0); return nil }, "alignment 0"},
		{"alignment key as string", func(w *Writer) error { w.SetKV("general.alignment", "32"); return nil }, "general.alignment 32 is not a power of two"},
		{"data too short", func(w *Writer) error { return w.AddTensor("t", compute.F32, []int{5}, f32) }, "16 bytes of data, want 20"},
		{"duplicate tensor", func(w *Writer) error {
			_ = w.AddTensor("t", compute.F32, []int{4}, f32)
			return w.AddTensor("t", compute.F32, []int{4}, f32)
		}, `duplicate tensor "t"`},
		{"no dims", func(w *Writer) error { return w.AddTensor("t", compute.F32, nil, nil) }, "0 dimensions"},
		{"5 dims", func(w *Writer) error { return w.AddTensor("t", compute.F32, []int{1, 1, 1, 1, 4}, f32) }, "5 dimensions"},
		{"zero dim", func(w *Writer) error { return w.AddTensor("t", compute.F32, []int{4, 0}, nil) }, "dimension 0"},
		{"2^43 values", func(w *Writer) error { return w.AddTensor("t", compute.F32, []int{1 << 22, 1 << 21}, nil) }, "dimension 2097152"},
		{"unknown type", func(w *Writer) error { return w.AddTensor("t", compute.DType(99), []int{4}, f32) }, "unknown tensor type 99"},
		{"partial block", func(w *Writer) error { return w.AddTensor("t", compute.Q4_0, []int{16}, f32) }, "block size"},
		{"func writes too little", func(w *Writer) error {
			return w.AddTensorFunc("t", compute.F32, []int{4}, func(out io.Writer) error { _, err := out.Write(f32[:3]); return err })
		}, `tensor "t": wrote 3 bytes, want 16`},
		{"func fails", func(w *Writer) error {
			return w.AddTensorFunc("t", compute.F32, []int{4}, func(io.Writer) error { return errors.New("source gone") })
		}, `tensor "t": source gone`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriter(3)
			err := tt.build(w)
			if err == nil {
				_, err = w.WriteTo(io.Discard)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
	t.Run("sink fails", func(t *testing.T) {
		w := NewWriter(3)
		w.SetKV("tokens", make([]string, 100_000))
		n, err := w.WriteTo(&failWriter{after: 70_000})
		if err == nil || !strings.Contains(err.Error(), "disk full") || n != 70_000 {
			t.Errorf("WriteTo = %d, %v; want 70000, disk full", n, err)
		}
	})
}

// TestWriterRewritesSharedFiles rewrites every shared GGUF from what the
// reader gives and expects the same bytes: the writer lays files out as
// llama.cpp's tools do, and the reader loses nothing.
func TestWriterRewritesSharedFiles(t *testing.T) {
	for _, path := range sharedGGUFs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f := openFile(t, path)
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := writeImage(t, NewWriterFrom(f))
			if !bytes.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Errorf("rewrite differs from byte %d (got %d bytes, want %d)", i, len(got), len(want))
			}
		})
	}
}

func TestWriteFileThenOpen(t *testing.T) {
	w := NewWriter(3)
	w.SetKV("general.architecture", "llama")
	if err := w.AddTensor("w", compute.F32, []int{2}, []byte{0, 0, 128, 63, 0, 0, 0, 64}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "w.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f := openFile(t, path)
	tn, err := f.Tensor("w")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tn.Data, []byte{0, 0, 128, 63, 0, 0, 0, 64}) {
		t.Errorf("data % x", tn.Data)
	}
	if a, _ := f.String("general.architecture"); a != "llama" {
		t.Errorf("architecture %q", a)
	}
}
