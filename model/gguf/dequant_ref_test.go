package gguf_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model/gguf"
)

// TestDequantizeMatchesGGML dequantizes tensors of every synthetic model
// and compares them bit for bit with ggml's reference dequantizers
// (reference/quants/<model>/<tensor>.f32, listed in index.json).
func TestDequantizeMatchesGGML(t *testing.T) {
	models := testmodels.Lookup()
	refDir := filepath.Join(models, "..", "reference", "quants")
	dirs, err := os.ReadDir(refDir)
	if err == nil && len(dirs) == 0 {
		err = errors.New("no reference directories")
	}
	if err != nil {
		msg := "dequantization references missing (set TROUPE_TEST_MODELS): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	checked := map[compute.DType]int{}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		t.Run(d.Name(), func(t *testing.T) {
			rel := testmodels.LookupReference(t, d.Name()).Rel
			for typ, n := range dequantRefModel(t, filepath.Join(refDir, d.Name()), filepath.Join(models, rel)) {
				checked[typ] += n
			}
		})
	}
	total := 0
	for _, n := range checked {
		total += n
	}
	if total == 0 {
		t.Fatal("no tensors checked")
	}
	// Every type the references hold, so that a lost directory shows.
	for _, typ := range []compute.DType{compute.F16, compute.BF16, compute.Q4_0, compute.Q4_1,
		compute.Q5_0, compute.Q5_1, compute.Q8_0, compute.Q2_K, compute.Q3_K, compute.Q4_K, compute.Q5_K,
		compute.Q6_K, compute.IQ4_NL, compute.IQ4_XS} {
		if checked[typ] == 0 {
			t.Errorf("no %s tensor checked", typ)
		}
	}
	t.Logf("%d tensors bit-exact with ggml, by type: %v", total, checked)
}

// dequantRefModel checks every tensor listed in dir/index.json against the
// GGUF file at path and returns how many tensors of each type matched.
func dequantRefModel(t *testing.T, dir, path string) map[compute.DType]int {
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index map[string]struct {
		Type string `json:"type"`
		Ne   []int  `json:"ne"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	f, err := gguf.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reference %s has no model: %v", dir, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	names := make([]string, 0, len(index))
	for name := range index {
		names = append(names, name)
	}
	sort.Strings(names)
	matched := map[compute.DType]int{}
	for _, name := range names {
		entry := index[name]
		tensor, err := f.Tensor(name)
		if err != nil {
			t.Error(err)
			continue
		}
		if tensor.Type.String() != entry.Type || !slices.Equal(tensor.Shape, entry.Ne) {
			t.Errorf("%s: file has %s %v, reference %s %v", name, tensor.Type, tensor.Shape, entry.Type, entry.Ne)
			continue
		}
		want, err := os.ReadFile(filepath.Join(dir, name+".f32"))
		if err != nil {
			t.Error(err)
			continue
		}
		if len(want) != 4*tensor.Elems() {
			t.Errorf("%s: reference holds %d bytes, want %d", name, len(want), 4*tensor.Elems())
			continue
		}
		got := make([]float32, tensor.Elems())
		if err := compute.Dequantize(tensor.Type, tensor.Data, got); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		bad, first := 0, -1
		for i, v := range got {
			if math.Float32bits(v) != binary.LittleEndian.Uint32(want[4*i:]) {
				if first < 0 {
					first = i
				}
				bad++
			}
		}
		if bad > 0 {
			w := math.Float32frombits(binary.LittleEndian.Uint32(want[4*first:]))
			t.Errorf("%s (%s %v): %d of %d values differ; first at %d (row %d): got %v (%#08x), want %v (%#08x)",
				name, tensor.Type, tensor.Shape, bad, len(got), first, first/tensor.Cols(),
				got[first], math.Float32bits(got[first]), w, math.Float32bits(w))
			continue
		}

		// The last row through DequantizeRow must give the same values.
		last := tensor.Rows() - 1
		row := make([]float32, tensor.Cols())
		if err := compute.DequantizeRow(tensor, last, row); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		sameBits := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
		if !slices.EqualFunc(row, got[last*tensor.Cols():], sameBits) {
			t.Errorf("%s: DequantizeRow(%d) differs from Dequantize", name, last)
			continue
		}
		matched[tensor.Type]++
	}
	return matched
}
