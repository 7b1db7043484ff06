package compute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestInPlaceMatMul checks that a tensor read in place gives the packed
// path's bits, for every activation count from 1 to 13 (the x8, x4 and x1
// kernels) and for each row alone (batch invariance), on shapes with and
// without rows past the last whole panel, with two workers, on every ISA
// level this machine runs; and that the in-place binding copied nothing
// and, for the types with in-place assembly, runs it.
func TestInPlaceMatMul(t *testing.T) {
	for _, isa := range append(hostISAs(), Generic) {
		t.Run(isa.String(), func(t *testing.T) {
			saved := hostISA
			hostISA = isa
			defer func() { hostISA = saved }()
			testInPlaceMatMul(t)
		})
	}
}

func testInPlaceMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	mm := NewMatMuler(2)
	for _, typ := range []DType{Q4_K, Q6_K, Q8_0, Q5_K, Q4_0, MXFP4} {
		for _, shape := range []struct{ n, k int }{{24, 512}, {19, 256}, {40, 768}} {
			if shape.k%typ.BlockSize() != 0 {
				continue
			}
			data := randomWeights(rng, typ, shape.n, shape.k)
			packed := &Tensor{Name: "packed", Type: typ, Shape: []int{shape.k, shape.n}, Data: data}
			inPlace := &Tensor{Name: "inplace", Type: typ, Shape: []int{shape.k, shape.n}, Data: data, InPlace: true}
			const m = 13
			x := edgeActs(rng, m, shape.k)
			for mi := 1; mi <= m; mi++ {
				want := make([]float32, mi*shape.n)
				got := make([]float32, mi*shape.n)
				if err := mm.MatMul(want, x, mi, packed); err != nil {
					t.Fatal(err)
				}
				if err := mm.MatMul(got, x, mi, inPlace); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v n%d k%d m%d: output %d: in place %g, packed %g", typ, shape.n, shape.k, mi, i, got[i], want[i])
					}
				}
				one := make([]float32, shape.n)
				for row := range mi {
					if err := mm.MatMul(one, x[row*shape.k:], 1, inPlace); err != nil {
						t.Fatal(err)
					}
					for i, v := range one {
						if g := got[row*shape.n+i]; math.Float32bits(g) != math.Float32bits(v) {
							t.Fatalf("%v n%d k%d: row %d of %d gives %g, alone %g", typ, shape.n, shape.k, row, mi, g, v)
						}
					}
				}
			}
			if inPlace.kernel().packed() {
				t.Errorf("%v: an InPlace tensor was packed", typ)
			}
			if k, ok := inPlace.kernel().(*blockKernel[blockQ8_K]); ok && InPlaceAsm(typ) && k.asm == nil {
				t.Errorf("%v: InPlaceAsm, but the Go reference is bound", typ)
			}
		}
	}
}

// TestInPlaceAsmTable checks which types run assembly when read in place on
// each ISA: Q4_K and Q5_K by their in-place kernels (on arm64 their row
// kernels), Q6_K and Q8_0 by their row kernels, which read the file's
// layout anyway.
func TestInPlaceAsmTable(t *testing.T) {
	if len(hostISAs()) == 0 {
		t.Skip("no assembly kernels on this CPU/GOARCH")
	}
	type want struct {
		typ            DType
		repacks, inAsm bool
	}
	table := []want{
		{Q4_K, true, true},
		{Q5_K, true, true},
		{Q6_K, false, true},
		{Q8_0, false, true},
		{F16, false, true},
		{Q4_0, true, false},
		{MXFP4, true, true},
	}
	if !hostISA.x86() { // arm64: the K-quant kernels read rows as stored
		table[0].repacks, table[1].repacks = false, false
	}
	for _, isa := range hostISAs() {
		for _, c := range table {
			if !isa.x86() && missingKernel(t, isa, c.typ, c.typ != F16 && !hasKernel(c.typ, isa)) {
				continue
			}
			if got := repacks(c.typ, isa); got != c.repacks {
				t.Errorf("%v on %v: repacks %v, want %v", c.typ, isa, got, c.repacks)
			}
			if got := inPlaceAsm(c.typ, isa); got != c.inAsm {
				t.Errorf("%v on %v: in-place assembly %v, want %v", c.typ, isa, got, c.inAsm)
			}
		}
	}
}

// hasKernel reports whether integer weight type t has assembly on isa.
func hasKernel(t DType, isa ISA) bool {
	return asmFor[blockQ8_0](t).best(isa) != nil || asmFor[blockQ8_1](t).best(isa) != nil ||
		asmFor[blockQ8_K](t).best(isa) != nil
}

// BenchmarkInPlace compares a Q4_K expert-sized product read in place with
// the packed one (go test -bench InPlace ./compute).
func BenchmarkInPlace(b *testing.B) {
	rng := rand.New(rand.NewPCG(43, 44))
	const n, k = 768, 2048 // a Qwen3-30B-A3B expert's gate
	data := randomWeights(rng, Q4_K, n, k)
	for _, m := range []int{1, 4, 16} {
		x := randomActs(rng, m*k)
		out := make([]float32, m*n)
		for _, inPlace := range []bool{false, true} {
			b.Run(fmt.Sprintf("m%d/inplace=%v", m, inPlace), func(b *testing.B) {
				w := &Tensor{Name: "w", Type: Q4_K, Shape: []int{k, n}, Data: data, InPlace: inPlace}
				benchMatMul(b, hostISA, 1, true, out, x, m, w) // the first call binds w
				reportGFLOPs(b, m, n, k, 0)
			})
		}
	}
}
