package vision

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// TestAttentionHeadDims checks attention.run against a float64 reference
// for head sizes that are and are not multiples of 16 (Gemma 3's 72: a
// last value panel of 8 columns) and more rows than a query block, through
// GemmNN and through the MatMul path (arm64's, where GemmNN is Go).
func TestAttentionHeadDims(t *testing.T) {
	for _, fast := range []bool{true, false} {
		if fast && !gemmFast {
			continue
		}
		t.Run(map[bool]string{true: "gemm", false: "matmul"}[fast], func(t *testing.T) {
			was := gemmFast
			gemmFast = fast
			defer func() { gemmFast = was }()
			attentionHeadDims(t)
		})
	}
}

func attentionHeadDims(t *testing.T) {
	mm := compute.NewMatMuler(2)
	for _, hd := range []int{64, 72, 80, 8} {
		const n, heads = 101, 3
		d := heads * hd
		q, k, v := randQKV(rand.NewPCG(1, uint64(hd)), n*d)
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

// TestAttentionWorkersWindows checks that attention's bits do not depend
// on the workers, and that a window's rows come out as an attention over
// that window alone.
// TestAttentionJoin: with more blocks of query rows than heads, a worker
// that runs out of heads joins one still running; the bits are those of
// one worker.
func TestAttentionJoin(t *testing.T) {
	if !gemmFast {
		t.Skip("split runs with GemmNN's assembly only")
	}
	const n, heads, hd = 500, 3, 80
	d := heads * hd
	q, k, v := randQKV(rand.NewPCG(4, 5), n*d)
	sameWhenJoined(t, &attnJoins, "head", func(mm *compute.MatMuler) []float32 {
		out := make([]float32, n*d)
		if err := newAttention(n, hd).run(mm, out, q, k, v, heads, nil); err != nil {
			t.Fatal(err)
		}
		return out
	})
}

func TestAttentionWorkersWindows(t *testing.T) {
	const n, heads, hd = 103, 3, 72
	d := heads * hd
	q, k, v := randQKV(rand.NewPCG(2, 3), n*d)
	bounds := []int{0, 40, 41, 97, n} // windows of 40, 1, 56 and 6 rows
	win := make([][2]int, n)
	for i := 1; i < len(bounds); i++ {
		for t := bounds[i-1]; t < bounds[i]; t++ {
			win[t] = [2]int{bounds[i-1], bounds[i]}
		}
	}
	for _, w := range [][][2]int{nil, win} {
		one, three := make([]float32, n*d), make([]float32, n*d)
		if err := newAttention(n, hd).run(compute.NewMatMuler(1), one, q, k, v, heads, w); err != nil {
			t.Fatal(err)
		}
		if err := newAttention(n, hd).run(compute.NewMatMuler(3), three, q, k, v, heads, w); err != nil {
			t.Fatal(err)
		}
		for i := range one {
			if math.Float32bits(one[i]) != math.Float32bits(three[i]) {
				t.Fatalf("windows %v: value %d: %v with 1 worker, %v with 3", w != nil, i, one[i], three[i])
			}
		}
		if w == nil {
			continue
		}
		for i := 1; i < len(bounds); i++ {
			lo, hi := bounds[i-1]*d, bounds[i]*d
			alone := make([]float32, hi-lo)
			if err := newAttention(bounds[i]-bounds[i-1], hd).run(compute.NewMatMuler(2), alone, q[lo:hi], k[lo:hi], v[lo:hi], heads, nil); err != nil {
				t.Fatal(err)
			}
			for j := range alone {
				if math.Float32bits(alone[j]) != math.Float32bits(one[lo+j]) {
					t.Fatalf("window %d: value %d: %v, alone %v", i, j, one[lo+j], alone[j])
				}
			}
		}
	}
}

// randQKV returns queries, keys and values of n standard normal values
// each, drawn from src.
func randQKV(src rand.Source, n int) (q, k, v []float32) {
	r := rand.New(src)
	q, k, v = make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range q {
		q[i], k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	return q, k, v
}

// BenchmarkAttention times one layer's attention (all heads) at the real
// projectors' shapes: Gemma 3's 4096 patches of 16 heads of 72, Qwen3-VL's
// 2304 of 16 heads of 64 (768 px), Qwen2-VL's 1600 of 16 heads of 80
// (560 px), SmolVLM's 1024 of 12 heads of 64.
func BenchmarkAttention(b *testing.B) {
	for _, s := range []struct {
		name         string
		n, heads, hd int
	}{{"gemma3", 4096, 16, 72}, {"qwen3vl", 2304, 16, 64}, {"qwen2vl", 1600, 16, 80}, {"smolvlm", 1024, 12, 64}} {
		b.Run(s.name, func(b *testing.B) {
			d := s.heads * s.hd
			q, k, v := randQKV(rand.NewPCG(1, 2), s.n*d)
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
