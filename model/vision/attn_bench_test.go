package vision

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// BenchmarkAttention times one layer's attention (all heads) at the real
// projectors' shapes: Gemma 3's 4096 patches of 16 heads of 72, Qwen3-VL's
// 2304 of 16 heads of 64 (768 px), SmolVLM's 1024 of 12 heads of 64.
func BenchmarkAttention(b *testing.B) {
	for _, s := range []struct {
		name         string
		n, heads, hd int
	}{{"gemma3", 4096, 16, 72}, {"qwen3vl", 2304, 16, 64}, {"smolvlm", 1024, 12, 64}} {
		b.Run(s.name, func(b *testing.B) {
			d := s.heads * s.hd
			r := rand.New(rand.NewPCG(1, 2))
			q, k, v := make([]float32, s.n*d), make([]float32, s.n*d), make([]float32, s.n*d)
			for i := range q {
				q[i], k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			out := make([]float32, s.n*d)
			a := newAttention(s.n, s.hd)
			mm := compute.NewMatMuler(runtime.GOMAXPROCS(0))
			cpu0 := cpuSeconds()
			for b.Loop() {
				if err := a.run(mm, out, q, k, v, s.heads, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
		})
	}
}
