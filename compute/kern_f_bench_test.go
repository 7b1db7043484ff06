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

// BenchmarkMatMulFloat measures MatMul on TinyLlama-sized float weights
// (F32, F16, BF16; k = 2048; n = 2048 and 5632) for a decode step (m = 1),
// a batched decode step (m = 16) and prefill chunks (m = 64, 512), on two
// workers, with the kernels MatMul picks on this machine. GFLOP/cpu-s
// divides by the CPU time the process used rather than the wall time:
// steadier on a shared machine.
func BenchmarkMatMulFloat(b *testing.B) {
	rng := rand.New(rand.NewPCG(19, 20))
	const k = 2048
	for _, typ := range []DType{F32, F16, BF16} {
		for _, n := range []int{2048, 5632} {
			w := &Tensor{Name: "w", Type: typ, Shape: []int{k, n}, Data: randomWeights(rng, typ, n, k)}
			for _, m := range []int{1, 16, 64, 512} {
				x, out := randomActs(rng, m*k), make([]float32, m*n)
				b.Run(fmt.Sprintf("%v/n%d/m%d", typ, n, m), func(b *testing.B) {
					mm := NewMatMuler(2)
					cpu0 := cpuTime()
					for b.Loop() {
						if err := mm.MatMul(out, x, m, w); err != nil {
							b.Fatal(err)
						}
					}
					flops := 2 * float64(m*n*k) * float64(b.N)
					b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					b.ReportMetric(flops/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
				})
			}
		}
	}
}
