package vision

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// TestAttentionHeadDims checks attention.run against a float64 reference
// for head sizes that are and are not multiples of 16 (Gemma 3's 72 takes
// zero-padded query and key rows).
func TestAttentionHeadDims(t *testing.T) {
	mm := compute.NewMatMuler(2)
	for _, hd := range []int{64, 72, 80, 8} {
		const n, heads = 37, 3
		d := heads * hd
		r := rand.New(rand.NewPCG(1, uint64(hd)))
		q, k, v := make([]float32, n*d), make([]float32, n*d), make([]float32, n*d)
		for i := range q {
			q[i], k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		out := make([]float32, n*d)
		if err := newAttention(n, hd).run(mm, out, q, k, v, heads, nil); err != nil {
			t.Fatal(err)
		}
		scale := 1 / math.Sqrt(float64(hd))
		for h := range heads {
			for i := range n {
				w := make([]float64, n)
				mx, sum := math.Inf(-1), 0.0
				for j := range n {
					var s float64
					for c := range hd {
						s += float64(q[i*d+h*hd+c]) * float64(k[j*d+h*hd+c])
					}
					w[j] = s * scale
					mx = max(mx, w[j])
				}
				for j := range n {
					w[j] = math.Exp(w[j] - mx)
					sum += w[j]
				}
				for c := range hd {
					var want float64
					for j := range n {
						want += w[j] / sum * float64(v[j*d+h*hd+c])
					}
					if got := float64(out[i*d+h*hd+c]); math.Abs(got-want) > 1e-4 {
						t.Fatalf("hd %d head %d row %d col %d: %g, want %g", hd, h, i, c, got, want)
					}
				}
			}
		}
	}
}
