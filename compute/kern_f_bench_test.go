package compute

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchMatMul times mm.MatMul(out, x, m, w) on a MatMuler of workers
// workers with isa as hostISA; with warm, one call before the loop packs
// (or binds) w. It returns the CPU time the loop used.
func benchMatMul(b *testing.B, isa ISA, workers int, warm bool, out, x []float32, m int, w *Tensor) time.Duration {
	saved := hostISA
	hostISA = isa
	defer func() { hostISA = saved }()
	mm := NewMatMuler(workers)
	if warm {
		if err := mm.MatMul(out, x, m, w); err != nil { // packs w
			b.Fatal(err)
		}
	}
	cpu0 := cpuTime()
	for b.Loop() {
		if err := mm.MatMul(out, x, m, w); err != nil {
			b.Fatal(err)
		}
	}
	return cpuTime() - cpu0
}

// reportGMACs reports GMAC/s: the m·n·k weight·activation products of
// each of the b.N products.
func reportGMACs(b *testing.B, m, n, k int) {
	b.ReportMetric(float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
}

// reportGFLOPs reports GFLOP/s, and with cpu (the CPU time used) > 0
// GFLOP/cpu-s, which is steadier on a shared machine.
func reportGFLOPs(b *testing.B, m, n, k int, cpu time.Duration) {
	flops := 2 * float64(m*n*k) * float64(b.N)
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu > 0 {
		b.ReportMetric(flops/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkMatMulFloat measures MatMul on TinyLlama-sized float weights
// (F32, F16, BF16; k = 2048; n = 2048 and 5632) for a decode step (m = 1),
// a batched decode step (m = 16) and prefill chunks (m = 64, 512), on two
// workers, with the kernels MatMul picks on this machine. GFLOP/cpu-s
// divides by the CPU time the process used rather than the wall time:
// steadier on a shared machine.
func BenchmarkMatMulFloat(b *testing.B) {
	benchTinyLlama(b, rand.New(rand.NewPCG(19, 20)), []DType{F32, F16, BF16}, []int{1, 16, 64, 512},
		func(b *testing.B, w *Tensor, x, out []float32, m, n, k int) {
			reportGFLOPs(b, m, n, k, benchMatMul(b, hostISA, 2, false, out, x, m, w))
		})
}

// benchTinyLlama runs bench on TinyLlama-sized random weights of each of
// types (k = 2048; n = 2048 and 5632) against m random activation rows for
// each of ms, as the sub-benchmarks type/n/m.
func benchTinyLlama(b *testing.B, rng *rand.Rand, types []DType, ms []int,
	bench func(b *testing.B, w *Tensor, x, out []float32, m, n, k int)) {
	const k = 2048
	for _, typ := range types {
		for _, n := range []int{2048, 5632} {
			w := randomTensor(rng, typ, n, k)
			for _, m := range ms {
				x, out := randomActs(rng, m*k), make([]float32, m*n)
				b.Run(fmt.Sprintf("%v/n%d/m%d", typ, n, m), func(b *testing.B) { bench(b, w, x, out, m, n, k) })
			}
		}
	}
}

// BenchmarkMatMulFloatTall measures MatMul on F16 and F32 weights of a
// vision encoder's shape (k = n = 1280, Qwen2.5-VL's width) against an
// image's many activation rows (m = 1600, a 560-pixel image's patches) and
// a block's worth (m = 96), on two workers: the rows in L2-sized blocks
// keep the tall product near the short one's rate.
func BenchmarkMatMulFloatTall(b *testing.B) {
	rng := rand.New(rand.NewPCG(19, 20))
	const k, n = 1280, 1280
	for _, typ := range []DType{F16, F32} {
		w := randomTensor(rng, typ, n, k)
		for _, m := range []int{96, 1600} {
			x, out := randomActs(rng, m*k), make([]float32, m*n)
			b.Run(fmt.Sprintf("%v/m%d", typ, m), func(b *testing.B) {
				reportGFLOPs(b, m, n, k, benchMatMul(b, hostISA, 2, false, out, x, m, w))
			})
		}
	}
}
