package compute

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMXFP4InPlaceKernels checks the in-place kernels (rows as stored)
// against the Go block dot product bit for bit, as TestMXFP4Kernels does
// the panel kernels, with row counts that leave a last group of fewer than
// eight rows.
func TestMXFP4InPlaceKernels(t *testing.T) {
	isas := map[ISA]*panelKernel[blockQ8_0]{AVX2: mxfp4InPlaceAVX2, AVX512VNNI: mxfp4InPlaceVNNI}
	forKernelShapes(t, rand.NewPCG(45, 46), []DType{MXFP4}, []kernelShape{{1, 1, 1}, {8, 1, 1}, {24, 3, 5}, {43, 9, 9}, {7, 2, 4}, {19, 2, 8}, {40, 3, 17},
		{24, 3, 2}, {16, 2, 3}, {19, 2, 6}, {43, 3, 7}}, // and the x2 and x3 tails
		func(t *testing.T, typ DType, shape kernelShape, w *Tensor, x []float32) {
			for _, isa := range hostISAs() {
				pk := isas[isa]
				if pk == nil {
					continue
				}
				checkRows(t, isa, MXFP4, w, x, shape.m, true, func(x []float32, m int) []float32 { return panelOutputs(pk, w, x, m) })
			}
		})
}

// BenchmarkMXFP4InPlace measures the in-place kernels beside the panel
// kernels on one thread (k = 2048, n = 2048; m = 1 and 64 activation rows),
// calling them directly: the packing is done before the loop.
func BenchmarkMXFP4InPlace(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	const k, n = 2048, 2048
	w := &Tensor{Name: "w", Type: MXFP4, Shape: []int{k, n}, Data: randomMXFP4(rng, n, k)}
	for _, m := range []int{1, 64} {
		var xq []blockQ8_0
		quantizeRows(&xq, randomActs(rng, m*k), m, k/32, quantizeRowQ8_0)
		setCorr(xq, -128)
		out := make([]float32, m*n)
		for _, kc := range []struct {
			name string
			pk   *panelKernel[blockQ8_0]
		}{{"panel", mxfp4VNNI}, {"inplace", mxfp4InPlaceVNNI}} {
			if hostISA < AVX512VNNI {
				b.Skip("no AVX512VNNI")
			}
			var p *packed
			if kc.pk.pack != nil {
				p = kc.pk.pack(w)
			}
			b.Run(fmt.Sprintf("%s/m%d", kc.name, m), func(b *testing.B) {
				cpu0 := cpuTime()
				for b.Loop() {
					kc.pk.rows(p, w, out, xq, m, 0, n)
				}
				flops := 2 * float64(m*n*k) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flops/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
			})
		}
	}
}
