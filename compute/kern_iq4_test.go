package compute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestIQ4Kernels checks the IQ4_NL panel kernels and the IQ4_XS row kernels
// of every ISA against the Go block dot products bit for bit (ggml's
// repacked iq4_nl_8x8 order and ggml_vec_dot_iq4_xs_q8_K's lanes), on random
// blocks and on activation rows at ±127 and all zero, for 1 to 9 activation
// rows, each also run alone.
func TestIQ4Kernels(t *testing.T) {
	forKernelShapes(t, rand.NewPCG(41, 42), []DType{IQ4_NL, IQ4_XS}, []kernelShape{{8, 1, 1}, {24, 3, 5}, {43, 9, 9}, {16, 7, 4}, {19, 2, 8},
		{24, 3, 2}, {16, 2, 3}, {19, 2, 6}, {43, 3, 7}}, // and the x2 and x3 tails
		func(t *testing.T, typ DType, shape kernelShape, w *Tensor, x []float32) {
			for _, isa := range hostISAs() {
				if missingKernel(t, isa, typ, typ == IQ4_NL && panelKernelFor(typ, isa) == nil || typ == IQ4_XS && kKernelFor(typ, isa) == nil) {
					continue
				}
				checkRows(t, isa, typ, w, x, shape.m, false, func(x []float32, m int) []float32 { return iq4Outputs(typ, isa, w, x, m) })
			}
		})
}

// iq4Outputs runs typ's assembly on isa over w for the m activation rows of
// x, returning m×n outputs (columns it leaves to the reference kernels stay
// NaN).
func iq4Outputs(typ DType, isa ISA, w *Tensor, x []float32, m int) []float32 {
	if typ == IQ4_NL {
		return panelOutputs(panelKernelFor(typ, isa), w, x, m)
	}
	k, n := w.Cols(), w.Rows()
	var xq []blockQ8_K
	quantizeRows(&xq, x, m, k/QK_K, quantizeRowQ8_K)
	out := make([]float32, m*n)
	for i := range out {
		out[i] = float32(math.NaN())
	}
	kKernelFor(typ, isa).rows(nil, w, out, xq, m, 0, n)
	return out
}

// BenchmarkMatMulIQ4 measures MatMul on TinyLlama-sized IQ4 weights beside
// Q4_0 and Q4_K (k = 2048, n = 2048) for a decode step (m = 1) and a
// prefill chunk (m = 64), with two workers, per ISA. GMAC/s counts the
// weight·activation products.
func BenchmarkMatMulIQ4(b *testing.B) {
	benchMatMulTypes(b, []DType{IQ4_NL, Q4_0, IQ4_XS, Q4_K}, func(b *testing.B, isa ISA, out, x []float32, m int, w *Tensor) {
		benchMatMul(b, isa, 2, true, out, x, m, w)
		reportGMACs(b, m, w.Rows(), w.Cols())
	})
}

// benchMatMulTypes runs bench for each of types on TinyLlama-sized random
// weights (k = 2048, n = 2048), for m = 1 and 64 activation rows, per ISA.
func benchMatMulTypes(b *testing.B, types []DType, bench func(b *testing.B, isa ISA, out, x []float32, m int, w *Tensor)) {
	rng := rand.New(rand.NewPCG(5, 6))
	const k, n = 2048, 2048
	for _, typ := range types {
		w := randomTensor(rng, typ, n, k)
		for _, m := range []int{1, 64} {
			x := randomActs(rng, m*k)
			out := make([]float32, m*n)
			for _, isa := range hostISAs() {
				b.Run(fmt.Sprintf("%v/m%d/%v", typ, m, isa), func(b *testing.B) { bench(b, isa, out, x, m, w) })
			}
		}
	}
}

// TestIQ4Types pins the IQ4 type ids, names and block sizes (ggml's).
func TestIQ4Types(t *testing.T) {
	for _, tc := range []struct {
		typ        DType
		id         uint32
		name       string
		n, rowSize int
	}{
		{IQ4_NL, 20, "IQ4_NL", 64, 36},
		{IQ4_XS, 23, "IQ4_XS", 512, 272},
	} {
		got, err := tc.typ.RowSize(tc.n)
		if uint32(tc.typ) != tc.id || tc.typ.String() != tc.name || err != nil || got != tc.rowSize {
			t.Errorf("%v: id %d, %d values take %d bytes (%v); want %d, %s, %d", tc.typ, uint32(tc.typ), tc.n, got, err, tc.id, tc.name, tc.rowSize)
		}
		if p, ok := ParseDType(tc.name); !ok || p != tc.typ {
			t.Errorf("ParseDType(%q) = %v, %v", tc.name, p, ok)
		}
	}
	if _, err := IQ4_XS.RowSize(32); err == nil {
		t.Error("IQ4_XS accepted a row of 32 values")
	}
}
