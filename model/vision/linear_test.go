package vision

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// randomWeights is an n×k matrix of type typ (F32 or F16) of random values.
func randomWeights(r *rand.Rand, typ compute.DType, k, n int) *compute.Tensor {
	size := 4
	if typ == compute.F16 {
		size = 2
	}
	data := make([]byte, n*k*size)
	for i := range n * k {
		v := float32(r.NormFloat64()) / 8
		if typ == compute.F16 {
			binary.LittleEndian.PutUint16(data[2*i:], compute.FP32ToFP16(v))
		} else {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
	}
	return &compute.Tensor{Name: "w", Type: typ, Shape: []int{k, n}, Data: data}
}

// TestLinearJoin: with more blocks of rows than groups of columns, a
// worker out of groups joins one still running; the bits (bias and
// residual added too) are those of one worker.
func TestLinearJoin(t *testing.T) {
	if !gemmFast {
		t.Skip("the groups run with GemmPacked's assembly only")
	}
	m, k, n := 7*linearRows-5, 64, 3*linearCols-7
	r := rand.New(rand.NewPCG(3, 4))
	w := randomWeights(r, compute.F16, k, n)
	x, bias, resid := make([]float32, m*k), make([]float32, n), make([]float32, m*n)
	for _, v := range [][]float32{x, bias, resid} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	sameWhenJoined(t, &linearJoins, "group", func(mm *compute.MatMuler) []float32 {
		out, res := make([]float32, m*n), slices.Clone(resid)
		if err := linearAdd(mm, out, x, m, w, bias, res); err != nil {
			t.Fatal(err)
		}
		return append(out, res...)
	})
}

// TestLinearWorkers checks that linear gives GemmNN's bits (MatMul's
// without GemmPacked's assembly) on 1, 2 and 3 workers (m not a multiple of
// the micro-panel height nor of linear's row block, n not of the panel
// width; k within one of GemmPacked's blocks of k and past several, not a
// multiple of the block; one group of columns and several), and that it
// agrees with MatMul up to the order of the sums.
func TestLinearWorkers(t *testing.T) {
	for _, s := range [][3]int{{101, 70, 83}, {197, 600, 220}} {
		m, k, n := s[0], s[1], s[2]
		r := rand.New(rand.NewPCG(1, 2))
		x := make([]float32, m*k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for _, typ := range []compute.DType{compute.F32, compute.F16} {
			linearCheck(t, r, typ, x, m, k, n)
		}
	}
}

// linearCheck is TestLinearWorkers for one shape and weight type.
func linearCheck(t *testing.T, r *rand.Rand, typ compute.DType, x []float32, m, k, n int) {
	t.Helper()
	w := randomWeights(r, typ, k, n)
	want := make([]float32, m*n)
	if err := compute.NewMatMuler(1).MatMul(want, x, m, w); err != nil {
		t.Fatal(err)
	}
	// GemmNN over wᵀ unpacked (its Go code for the last n mod 8
	// columns): linear's bits, whatever its panels.
	wt := make([]float32, k*n)
	for j := range n {
		for p := range k {
			wt[p*n+j] = weightAt(w, j, p)
		}
	}
	xa := x
	if typ == compute.F16 {
		xa = make([]float32, m*k)
		compute.RoundF16s(xa, x)
	}
	first := make([]float32, m*n)
	compute.GemmNN(first, n, xa, k, wt, n, m, k, n)
	if !gemmFast {
		// Without GemmPacked's assembly (arm64, TROUPE_CPU=generic)
		// linear is MatMul.
		first = want
	}
	for _, workers := range []int{1, 2, 3} {
		got := make([]float32, m*n)
		if err := linear(compute.NewMatMuler(workers), got, x, m, w); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
				t.Fatalf("%d×%d×%d %s, %d workers: out[%d] = %v, want %v", m, k, n, typ, workers, i, got[i], first[i])
			}
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("%d×%d×%d %s: out[%d] = %v, MatMul %v", m, k, n, typ, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkLinear times linear layers of real shapes (F16 weights):
// SmolVLM-256M's MLP (1024 rows, 768 → 3072) through linear and through
// MatMul, and Qwen2-VL's four (a 560-pixel tile's 1600 rows; qkv, out,
// fc1, fc2) through linear, in GFLOP a CPU-second (a busy machine's wall
// time says less).
func BenchmarkLinear(b *testing.B) {
	mm := compute.NewMatMuler(runtime.GOMAXPROCS(0))
	for _, s := range []struct {
		name    string
		m, k, n int
		matmul  bool
	}{
		{"smolvlm-mlp", 1024, 768, 3072, true},
		{"qwen2vl-qkv", 1600, 1280, 3840, false},
		{"qwen2vl-out", 1600, 1280, 1280, false},
		{"qwen2vl-fc1", 1600, 1280, 5120, false},
		{"qwen2vl-fc2", 1600, 5120, 1280, false},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		w := randomWeights(r, compute.F16, s.k, s.n)
		compute.Prepare([]*compute.Tensor{w}, 1, nil)
		x := make([]float32, s.m*s.k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		out := make([]float32, s.m*s.n)
		paths := []struct {
			name string
			f    func() error
		}{{"gemm", func() error { return linear(mm, out, x, s.m, w) }}}
		if s.matmul {
			paths = append(paths, struct {
				name string
				f    func() error
			}{"matmul", func() error { return mm.MatMul(out, x, s.m, w) }})
		}
		for _, c := range paths {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				cpu0 := cpuSeconds()
				for b.Loop() {
					if err := c.f(); err != nil {
						b.Fatal(err)
					}
				}
				cpu := cpuSeconds() - cpu0
				b.ReportMetric(2*float64(s.m*s.k*s.n)*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
			})
		}
	}
}

// weightAt is w's value at row j, column p (F32 or F16).
func weightAt(w *compute.Tensor, j, p int) float32 {
	row := w.Row(j)
	if w.Type == compute.F16 {
		return compute.FP16ToFP32(binary.LittleEndian.Uint16(row[2*p:]))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(row[4*p:]))
}
