package lora

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// randTensor is an F32 tensor of shape (cols, rows) with random values.
func randTensor(rng *rand.Rand, name string, cols, rows int) *compute.Tensor {
	data := make([]byte, 4*cols*rows)
	for i := range cols * rows {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(rng.NormFloat64())))
	}
	return &compute.Tensor{Name: name, Type: compute.F32, Shape: []int{cols, rows}, Data: data}
}

// randVec is n values drawn from N(0, 1).
func randVec(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// checkAlone checks that row i of got, Add's result for a batch of rows x
// of w, has the bits Add gives row i alone with its adapters l.
func checkAlone(t *testing.T, ap *Applier, mm *compute.MatMuler, w *compute.Tensor, x, got []float32, i int, l []Scaled) {
	t.Helper()
	in, out := w.Shape[0], w.Shape[1]
	alone := make([]float32, out)
	if err := ap.Add(mm, alone, x[i*in:(i+1)*in], 1, w, []int32{0}, [][]Scaled{l}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(alone, got[i*out:(i+1)*out]) {
		t.Errorf("row %d: alone differs from in the batch", i)
	}
}

// addBatch runs Add on the batch x of n rows of w, checks each row's bits
// against the row's alone (checkAlone) and returns the result.
func addBatch(t *testing.T, w *compute.Tensor, x []float32, n int, seq []int32, loras [][]Scaled) []float32 {
	t.Helper()
	mm := compute.NewMatMuler(2)
	var ap Applier
	got := make([]float32, n*w.Shape[1])
	if err := ap.Add(mm, got, x, n, w, seq, loras); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		checkAlone(t, &ap, mm, w, x, got, i, loras[seq[i]])
	}
	return got
}

func f32At(t *compute.Tensor, r, c int) float64 {
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*(r*t.Cols()+c):])))
}

// TestApplierAdd: each row gets its own adapters' B·(A·x)·scale (within
// float32 rounding of a float64 reference), rows without adapters or
// whose adapter does not adapt w nothing, and a row's result is the same
// bits alone as in the mixed batch.
func TestApplierAdd(t *testing.T) {
	const in, out, n = 48, 40, 6
	rng := rand.New(rand.NewPCG(1, 2))
	w := &compute.Tensor{Name: "blk.0.attn_q.weight", Type: compute.F32, Shape: []int{in, out}}
	mk := func(rank int, alpha float32, name string) *Adapter {
		return &Adapter{Path: name, Alpha: alpha, Weights: map[string]*Pair{
			w.Name: {A: randTensor(rng, w.Name+".lora_a", in, rank), B: randTensor(rng, w.Name+".lora_b", rank, out)}}}
	}
	a, b := mk(4, 8, "a"), mk(8, 0, "b")
	other := &Adapter{Path: "other", Weights: map[string]*Pair{"blk.0.ffn_up.weight": a.Weights[w.Name]}}
	x := randVec(rng, n*in)
	seq := []int32{0, 1, 2, 3, 3, 4}
	loras := [][]Scaled{
		{{a, 0.5}},
		nil,
		{{b, 1}, {a, -1}},
		{{b, 2}},
		{{other, 1}},
	}
	got := addBatch(t, w, x, n, seq, loras)
	for i := range n {
		for c := range out {
			var want float64
			for _, s := range loras[seq[i]] {
				p := s.Adapter.Weights[w.Name]
				if p == nil {
					continue
				}
				var y float64
				for r := range p.Rank() {
					var ax float64
					for k := range in {
						ax += f32At(p.A, r, k) * float64(x[i*in+k])
					}
					y += f32At(p.B, c, r) * ax
				}
				want += y * float64(p.Scale(s.Adapter.Alpha, s.Scale))
			}
			if d := math.Abs(float64(got[i*out+c]) - want); d > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("row %d col %d: %v, want %v", i, c, got[i*out+c], want)
			}
		}
	}
	if !slices.Equal(got[out:2*out], make([]float32, out)) || !slices.Equal(got[5*out:], make([]float32, out)) {
		t.Error("a row without adapters for w changed")
	}
}

// TestApplierLargeGroup: a group large enough that its A product runs on
// the MatMuler's workers (sharedA) gives each row the bits it gets alone
// (where A's runs on the calling goroutine), through Prepare and
// MatMulThen as the forward pass calls them.
func TestApplierLargeGroup(t *testing.T) {
	const in, out, rank, n = 512, 48, 16, 160
	if n*rank*in < sharedA {
		t.Fatalf("%d rows do not reach sharedA", n)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	w := &compute.Tensor{Name: "blk.0.ffn_up.weight", Type: compute.F32, Shape: []int{in, out}, Data: randTensor(rng, "w", in, out).Data}
	a := &Adapter{Path: "a", Alpha: 32, Weights: map[string]*Pair{
		w.Name: {A: randTensor(rng, w.Name+".lora_a", in, rank), B: randTensor(rng, w.Name+".lora_b", rank, out)}}}
	x := randVec(rng, n*in)
	seq := make([]int32, n)
	loras := [][]Scaled{{{a, 0.5}}}
	mm := compute.NewMatMuler(2)
	var ap Applier
	forward := func(out, x []float32, n int) {
		after, err := ap.Prepare(mm, out, x, n, w, seq[:n], loras)
		if err != nil || after == nil {
			t.Fatalf("Prepare: %v, %v", after != nil, err)
		}
		if err := mm.MatMulThen(out, x, n, w, after); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]float32, n*out)
	forward(got, x, n)
	base := make([]float32, out)
	for i := range n {
		alone := make([]float32, out)
		forward(alone, x[i*in:(i+1)*in], 1)
		if !slices.Equal(alone, got[i*out:(i+1)*out]) {
			t.Fatalf("row %d: alone differs from in the large group", i)
		}
		if err := mm.MatMul(base, x[i*in:(i+1)*in], 1, w); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(alone, base) {
			t.Fatalf("row %d: no update", i)
		}
	}
}

// TestApplierMatMulPath: a pair whose B the AXPY form does not take (BF16)
// goes through MatMul (addPairs), with each row's result the same alone as
// in a batch mixing it with an F32 adapter, and close to the float64
// reference (within bf16's rounding of A·x, 2⁻⁹ of each term).
func TestApplierMatMulPath(t *testing.T) {
	const in, out, rank, n = 64, 40, 8, 4
	rng := rand.New(rand.NewPCG(5, 6))
	w := &compute.Tensor{Name: "blk.0.attn_v.weight", Type: compute.F32, Shape: []int{in, out}}
	bf := randTensor(rng, w.Name+".lora_b", rank, out)
	data := make([]byte, 2*rank*out)
	for i := range rank * out {
		binary.LittleEndian.PutUint16(data[2*i:], compute.FP32ToBF16(math.Float32frombits(binary.LittleEndian.Uint32(bf.Data[4*i:]))))
	}
	a := &Adapter{Path: "bf16", Alpha: 16, Weights: map[string]*Pair{w.Name: {
		A: randTensor(rng, w.Name+".lora_a", in, rank),
		B: &compute.Tensor{Name: bf.Name, Type: compute.BF16, Shape: []int{rank, out}, Data: data}}}}
	f := &Adapter{Path: "f32", Weights: map[string]*Pair{w.Name: {
		A: randTensor(rng, w.Name+".lora_a", in, rank), B: randTensor(rng, w.Name+".lora_b", rank, out)}}}
	if a.Weights[w.Name].lowRank() != nil {
		t.Fatal("a BF16 B took the AXPY form")
	}
	x := randVec(rng, n*in)
	seq := []int32{0, 1, 0, 2}
	loras := [][]Scaled{{{a, 1}}, {{f, 1}}, {{f, 0.5}, {a, 2}}}
	got := addBatch(t, w, x, n, seq, loras)
	for i := range n {
		if seq[i] != 0 {
			continue
		}
		p := a.Weights[w.Name]
		for c := range out {
			var y, mag float64 // mag: the sum of the terms' sizes, which bf16's rounding of A·x scales
			for r := range rank {
				var ax float64
				for k := range in {
					ax += f32At(p.A, r, k) * float64(x[i*in+k])
				}
				term := float64(compute.BF16ToFP32(binary.LittleEndian.Uint16(data[2*(c*rank+r):]))) * ax
				y, mag = y+term, mag+math.Abs(term)
			}
			s := float64(p.Scale(a.Alpha, 1))
			want := y * s
			if d := math.Abs(float64(got[i*out+c]) - want); d > 1e-2*mag*s+1e-5 {
				t.Fatalf("row %d col %d: %v, want %v", i, c, got[i*out+c], want)
			}
		}
	}
}
