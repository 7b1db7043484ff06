package compute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// hostISAs lists the ISA levels this machine runs kernels for, best first.
func hostISAs() []ISA {
	var isas []ISA
	for isa := hostISA; isa > Generic && isa >= baseISA; isa-- {
		isas = append(isas, isa)
	}
	return isas
}

// quantizeRows quantizes the m activation rows of x, nb blocks each, into
// *dst (grown if needed).
func quantizeRows[B any](dst *[]B, x []float32, m, nb int, quantize func([]float32, []B)) {
	y := grow(dst, m*nb)
	k := len(x) / m
	for t := range m {
		quantize(x[t*k:(t+1)*k], y[t*nb:(t+1)*nb])
	}
}

// missingKernel reports whether a kernel looked up for typ on isa is
// missing. On amd64 every integer type has its assembly at every level, so
// a missing one fails the test; on arm64 a type whose kernels are not
// written yet runs its Go dot product (which the model tests cover), and
// its kernel checks are skipped with a log line.
func missingKernel(t *testing.T, isa ISA, typ DType, missing bool) bool {
	t.Helper()
	if !missing {
		return false
	}
	if isa.x86() {
		t.Fatalf("%v: no %v kernel", isa, typ)
	}
	t.Logf("%v: no %v kernel yet: the Go dot product runs", isa, typ)
	return true
}

// panelOutputs runs pk over w for the m activation rows of x, returning
// m×n outputs (columns pk leaves to the reference kernels stay NaN).
func panelOutputs(pk *panelKernel[blockQ8_0], w *Tensor, x []float32, m int) []float32 {
	k, n := w.Cols(), w.Rows()
	var xq []blockQ8_0
	quantizeRows(&xq, x, m, k/32, quantizeRowQ8_0)
	setCorr(xq, pk.corr)
	out := make([]float32, m*n)
	for i := range out {
		out[i] = float32(math.NaN())
	}
	var p *packed
	if pk.pack != nil {
		p = pk.pack(w)
	}
	pk.rows(p, w, out, xq, m, 0, n)
	return out
}

// checkRows checks a kernel's outputs for the m activation rows of x
// (outputs(x, m): m×n values) bit for bit against each row run alone and
// against the Go block dot product of typ, and returns how many outputs
// it checked. An output the kernel leaves NaN is left to the reference
// kernels unless every is set: then a NaN must be the reference's.
func checkRows(t *testing.T, isa ISA, typ DType, w *Tensor, x []float32, m int, every bool, outputs func(x []float32, m int) []float32) int {
	t.Helper()
	k, n := w.Cols(), w.Rows()
	same := func(a, b float32) bool {
		return math.Float32bits(a) == math.Float32bits(b) || every && math.IsNaN(float64(a)) && math.IsNaN(float64(b))
	}
	got := outputs(x, m)
	checked := 0
	for t0 := range m {
		one := outputs(x[t0*k:(t0+1)*k], 1)
		xq := quantizedRow(typ, x[t0*k:(t0+1)*k])
		for r := range n {
			g := got[t0*n+r]
			if !every && math.IsNaN(float64(g)) {
				continue // left to the reference kernels
			}
			if !same(one[r], g) {
				t.Fatalf("%v: row %d act %d: alone %g, batched %g", isa, r, t0, one[r], g)
			}
			if want := vecDot(typ, false, w.Row(r), xq); !same(g, want) {
				t.Fatalf("%v: row %d act %d: got %g, reference %g", isa, r, t0, g, want)
			}
			checked++
		}
	}
	return checked
}

// edgeActs returns m random activation rows of k values, the first at ±1
// (every quant ±127) and the third, if any, all zero.
func edgeActs(rng *rand.Rand, m, k int) []float32 {
	x := randomActs(rng, m*k)
	for i := range k {
		x[i] = float32(1 - 2*(i%2))
	}
	if m > 2 {
		clear(x[2*k : 3*k])
	}
	return x
}

// kernelShape is a kernel test's shape: n weight rows of nb blocks, m
// activation rows.
type kernelShape struct{ n, nb, m int }

// forKernelShapes runs check as a subtest "TYPE/nN_nbNB_mM" for each of
// types and shapes, on randomWeights of the type and edgeActs activations
// drawn from src; it skips the test where there are no assembly kernels.
func forKernelShapes(t *testing.T, src rand.Source, types []DType, shapes []kernelShape,
	check func(t *testing.T, typ DType, shape kernelShape, w *Tensor, x []float32)) {
	if len(hostISAs()) == 0 {
		t.Skip("no assembly kernels on this CPU/GOARCH")
	}
	rng := rand.New(src)
	for _, typ := range types {
		for _, shape := range shapes {
			t.Run(fmt.Sprintf("%v/n%d_nb%d_m%d", typ, shape.n, shape.nb, shape.m), func(t *testing.T) {
				k := shape.nb * typ.BlockSize()
				w := &Tensor{Name: "w", Type: typ, Shape: []int{k, shape.n}, Data: randomWeights(rng, typ, shape.n, k)}
				check(t, typ, shape, w, edgeActs(rng, shape.m, k))
			})
		}
	}
}

// TestPanelKernels checks the assembly kernels against the Go block dot
// products bit for bit (the Q4_0 panels follow ggml's repacked gemv order,
// the Q5_0 and Q8_0 rows its vec_dot order, as the references do), and every kernel
// (x1..x4, x8, AVX2, VNNI) against the others, for 1 to 9, 11, 16 and 17
// activation rows.
func TestPanelKernels(t *testing.T) {
	forKernelShapes(t, rand.NewPCG(1, 2), []DType{Q4_0, Q5_0, Q8_0}, []kernelShape{{8, 1, 1}, {24, 3, 5}, {43, 64, 9}, {16, 7, 4}, {32, 2, 8}, {40, 3, 17}, {136, 4, 16},
		{24, 3, 2}, {43, 5, 3}, {40, 3, 6}, {24, 9, 7}, {19, 2, 11}}, // every tail after the x8 and x4 rows
		func(t *testing.T, typ DType, shape kernelShape, w *Tensor, x []float32) {
			rows := shape.n
			if typ == Q4_0 {
				rows = shape.n / panelRows * panelRows // the rest left to the reference kernels
			}
			var first []float32
			for _, isa := range hostISAs() {
				pk := panelKernelFor(typ, isa)
				if missingKernel(t, isa, typ, pk == nil) {
					continue
				}
				outputs := func(x []float32, m int) []float32 { return panelOutputs(pk, w, x, m) }
				if checked := checkRows(t, isa, typ, w, x, shape.m, false, outputs); checked < shape.m*rows {
					t.Fatalf("%v: only %d outputs checked", isa, checked)
				}
				got := outputs(x, shape.m)
				if first == nil {
					first = got
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
						t.Fatalf("%v differs from %v at %d: %g vs %g", isa, hostISA, i, got[i], first[i])
					}
				}
			}
		})
}

// BenchmarkMatMulQ measures MatMul on TinyLlama-sized weights (Q4_0, Q8_0,
// Q2_K, Q3_K, Q4_K, Q6_K; k = 2048; n = 2048 and 5632) for a decode step (m = 1) and a
// batched decode step (m = 16) and a prefill chunk (m = 64), with two workers, per ISA (generic = the Go
// reference). GMAC/s counts the weight·activation products.
func BenchmarkMatMulQ(b *testing.B) {
	benchTinyLlama(b, rand.New(rand.NewPCG(5, 6)), []DType{Q4_0, Q8_0, Q2_K, Q3_K, Q4_K, Q6_K}, []int{1, 16, 64},
		func(b *testing.B, w *Tensor, x, out []float32, m, n, k int) {
			for _, isa := range append(hostISAs(), Generic) {
				if isa == Generic && m > 1 {
					continue // minutes per run
				}
				b.Run(isa.String(), func(b *testing.B) {
					benchMatMul(b, isa, 2, true, out, x, m, w)
					reportGMACs(b, m, n, k)
				})
			}
		})
}

// TestKKernels checks the K-quant row kernels of every ISA against the Go
// dot products bit for bit (ggml's repacked q2_K and q4_K gemv order,
// ggml_vec_dot_q{3,5,6}_K_q8_K's lanes), on random blocks, on a first weight
// row at the extremes (see extremeKRow) and on activation rows at ±127 and
// all zero, for 1 to 9 and 13 activation rows (the x8, x4, x3, x2 and x1
// kernels).
func TestKKernels(t *testing.T) {
	if len(hostISAs()) == 0 {
		t.Skip("no assembly kernels on this CPU/GOARCH")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, typ := range []DType{Q2_K, Q3_K, Q4_K, Q5_K, Q6_K} {
		for _, shape := range []struct{ n, nb, m int }{{3, 1, 1}, {5, 8, 9}, {2, 3, 4}, {16, 2, 5}, {19, 1, 9}, {7, 2, 13},
			{16, 2, 2}, {3, 3, 3}, {16, 1, 6}, {9, 2, 7}, {4, 1, 8}} { // and the x3 and x2 tails
			k := shape.nb * QK_K
			w := &Tensor{Name: "w", Type: typ, Shape: []int{k, shape.n}, Data: randomWeights(rng, typ, shape.n, k)}
			extremeKRow(w)
			x := edgeActs(rng, shape.m, k)
			var xq []blockQ8_K
			quantizeRows(&xq, x, shape.m, shape.nb, quantizeRowQ8_K)
			kernels := []*panelKernel[blockQ8_K]{}
			for _, isa := range hostISAs() {
				if kk := kKernelFor(typ, isa); !missingKernel(t, isa, typ, kk == nil) {
					kernels = append(kernels, kk)
				}
			}
			if typ == Q4_K && hostISA == AVX512VNNI {
				kernels = append(kernels, q4_KRowsVNNI)
			}
			for ki, kk := range kernels {
				isa := ki
				var p *packed
				if kk.pack != nil {
					p = kk.pack(w)
				}
				out := make([]float32, shape.m*shape.n)
				done := kk.rows(p, w, out, xq, shape.m, 0, shape.n)
				for t0 := range shape.m {
					for r := range done {
						want := vecDotQ8_KKernel(typ)(w.Row(r), xq[t0*shape.nb:(t0+1)*shape.nb])
						if g := out[t0*shape.n+r]; math.Float32bits(g) != math.Float32bits(want) {
							t.Fatalf("%v %v n%d nb%d m%d: row %d act %d: got %g, reference %g", typ, isa, shape.n, shape.nb, shape.m, r, t0, g, want)
						}
					}
				}
			}
		}
	}
}

// extremeKRow sets the first row of w's Q2_K or Q3_K blocks to the largest
// products: Q2_K quants 3 with scales and mins 15; Q3_K quants −4 (hmask
// and qs clear) with scales −32 (6-bit 0), where x+128 = 255 makes the
// kernels' 16-bit pair sums largest.
func extremeKRow(w *Tensor) {
	bs := w.Type.TypeSize()
	for b := range w.Cols() / QK_K {
		blk := w.Data[b*bs : (b+1)*bs]
		switch w.Type {
		case Q2_K:
			for i := range 80 {
				blk[i] = 0xff
			}
		case Q3_K:
			clear(blk[0:108])
		}
	}
}

// BenchmarkMatMulTail measures MatMul on a TinyLlama-sized weight (k =
// 2048, n = 5632) for 1 to 9 activation rows on one worker, per ISA: a
// decode step of m sequences or a speculative verification of m − 1 draft
// tokens, where rows past the x8 and x4 panels take the x3, x2 or x1
// kernels. cpu-ms/op is the process's CPU time per product.
func BenchmarkMatMulTail(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	const k, n = 2048, 5632
	for _, typ := range []DType{Q4_0, Q8_0, Q4_K, Q6_K} {
		w := randomTensor(rng, typ, n, k)
		for m := 1; m <= 9; m++ {
			x := randomActs(rng, m*k)
			out := make([]float32, m*n)
			for _, isa := range hostISAs() {
				b.Run(fmt.Sprintf("%v/m%d/%v", typ, m, isa), func(b *testing.B) {
					cpu := benchMatMul(b, isa, 1, true, out, x, m, w)
					b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
				})
			}
		}
	}
}
