package compute

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkExpertGEMV reports the memory streaming of one-row products by
// many small matrices, the shape of a MoE decode step (Qwen3-30B-A3B's
// experts: 768×2048 gate and up in Q4_K, 2048×768 down in Q6_K), more of
// them than the L3 cache holds: "split" spreads each product's weight rows
// over two workers (a meeting per product), "whole" gives each of two
// workers half of the matrices, each run on a one-thread MatMuler (one
// meeting in all), "one" runs them all on one thread.
func BenchmarkExpertGEMV(b *testing.B) {
	const experts = 48
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		typ  DType
		k, n int
	}{{Q4_K, 2048, 768}, {Q6_K, 768, 2048}} {
		ws := make([]*Tensor, experts)
		bytes := 0
		for e := range ws {
			ws[e] = &Tensor{Name: "w", Type: tc.typ, Shape: []int{tc.k, tc.n}, Data: randomWeights(rng, tc.typ, tc.n, tc.k)}
			ws[e].kernel()
			bytes += len(ws[e].Data)
		}
		x := randomActs(rng, tc.k)
		outs := make([][]float32, experts)
		for e := range outs {
			outs[e] = make([]float32, tc.n)
		}
		report := func(b *testing.B) {
			b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		}
		for _, split := range []struct {
			name    string
			workers int
		}{{"one", 1}, {"split", 2}} {
			b.Run(fmt.Sprintf("%s/%s", tc.typ, split.name), func(b *testing.B) {
				mm := NewMatMuler(split.workers)
				for b.Loop() {
					for e, w := range ws {
						if err := mm.MatMul(outs[e], x, 1, w); err != nil {
							b.Fatal(err)
						}
					}
				}
				report(b)
			})
		}
		b.Run(fmt.Sprintf("%s/whole", tc.typ), func(b *testing.B) {
			mm, one := NewMatMuler(2), []*MatMuler{NewMatMuler(1), NewMatMuler(1)}
			share := func(wi int) {
				for e := wi; e < experts; e += 2 {
					if err := one[wi].MatMul(outs[e], x, 1, ws[e]); err != nil {
						panic(err)
					}
				}
			}
			for b.Loop() {
				mm.Parallel(2, share)
			}
			report(b)
		})
	}
}
