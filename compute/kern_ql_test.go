package compute

import (
	"math/rand/v2"
	"testing"
)

// q8_1Outputs runs pk over w for the m activation rows of x, returning m×n
// outputs.
func q8_1Outputs(pk *panelKernel[blockQ8_1], w *Tensor, x []float32, m int) []float32 {
	k, n := w.Cols(), w.Rows()
	var xq []blockQ8_1
	quantizeRows(&xq, x, m, k/32, quantizeRowQ8_1)
	out := make([]float32, m*n)
	pk.rows(nil, w, out, xq, m, 0, n)
	return out
}

// TestQ8_1Kernels checks the Q4_1 and Q5_1 row kernels of every ISA
// against the Go dot products (ggml's vec_dot order) bit for bit, and the
// kernels for one activation row against those for four and eight, on
// random blocks and on activation rows at ±127 and all zero.
func TestQ8_1Kernels(t *testing.T) {
	forKernelShapes(t, rand.NewPCG(31, 32), []DType{Q4_1, Q5_1}, []kernelShape{{1, 1, 1}, {24, 3, 5}, {43, 64, 9}, {16, 7, 4}, {9, 2, 17},
		{5, 3, 2}, {24, 3, 3}, {11, 4, 6}, {7, 2, 7}, {6, 2, 8}}, // and the x2 and x3 tails
		func(t *testing.T, typ DType, shape kernelShape, w *Tensor, x []float32) {
			for _, isa := range hostISAs() {
				pk := asmFor[blockQ8_1](typ).best(isa)
				if missingKernel(t, isa, typ, pk == nil) {
					continue
				}
				outputs := func(x []float32, m int) []float32 { return q8_1Outputs(pk, w, x, m) }
				if checked := checkRows(t, isa, typ, w, x, shape.m, true, outputs); checked != shape.m*shape.n {
					t.Fatalf("%v: %d outputs checked, want %d", isa, checked, shape.m*shape.n)
				}
			}
		})
}

// BenchmarkMatMulQLegacy measures MatMul on TinyLlama-sized Q5_0, Q4_1 and
// Q5_1 weights (k = 2048; n = 2048 and 5632) for a decode step (m = 1) and
// a prefill chunk (m = 64), with two workers, per ISA (generic = the Go
// reference, which these types ran before their assembly). GMAC/s counts
// the weight·activation products.
func BenchmarkMatMulQLegacy(b *testing.B) {
	benchTinyLlama(b, rand.New(rand.NewPCG(7, 8)), []DType{Q5_0, Q4_1, Q5_1}, []int{1, 64},
		func(b *testing.B, w *Tensor, x, out []float32, m, n, k int) {
			for _, isa := range append(hostISAs(), Generic) {
				b.Run(isa.String(), func(b *testing.B) {
					benchMatMul(b, isa, 2, false, out, x, m, w)
					reportGMACs(b, m, n, k)
				})
			}
		})
}
