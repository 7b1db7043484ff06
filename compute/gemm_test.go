package compute

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmNN checks GemmNN against gemmGo bit for bit over shapes with row
// and column tails and strides wider than the rows.
func TestGemmNN(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][3]int{{1, 1, 1}, {6, 64, 16}, {13, 72, 72}, {6, 9, 24}, {7, 72, 37}, {13, 80, 48}, {12, 5, 33}, {5, 100, 15}, {25, 1, 64}} {
		m, k, n := s[0], s[1], s[2]
		lda, ldb, ldc := k+3, n+5, n+7
		a, b := make([]float32, m*lda), make([]float32, k*ldb)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		got, want := make([]float32, m*ldc), make([]float32, m*ldc)
		GemmNN(got, ldc, a, lda, b, ldb, m, k, n)
		gemmGo(want, ldc, a, lda, b, ldb, m, k, n)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("m %d k %d n %d: c[%d] = %g, want %g", m, k, n, i, got[i], want[i])
			}
		}
		var d float64
		for p := range k {
			d += float64(a[(m-1)*lda+p]) * float64(b[p*ldb+n-1])
		}
		if g := float64(got[(m-1)*ldc+n-1]); math.Abs(g-d) > 1e-4*math.Sqrt(float64(k)) {
			t.Errorf("m %d k %d n %d: last output %g, want %g", m, k, n, g, d)
		}
	}
}

func BenchmarkGemmNN(b *testing.B) {
	for _, s := range []struct {
		name    string
		m, k, n int
	}{{"kq", 48, 64, 2304}, {"kqv", 48, 2304, 64}} {
		b.Run(s.name, func(b *testing.B) {
			x, y, c := make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*s.n)
			for i := range x {
				x[i] = 1
			}
			for i := range y {
				y[i] = 1
			}
			for b.Loop() {
				GemmNN(c, s.n, x, s.k, y, s.n, s.m, s.k, s.n)
			}
			b.ReportMetric(2*float64(s.m*s.k*s.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
