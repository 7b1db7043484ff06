package compute

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestQuantizeRowQ8_0Asm checks the assembly quantizer against the Go
// reference bit for bit, on random rows and edge blocks: all zero, one
// nonzero value, values exactly at rounding halves, tiny (subnormal f16
// scale) and huge magnitudes.
func TestQuantizeRowQ8_0Asm(t *testing.T) {
	const nb = 64
	x := edgeQ8Acts(nb)
	want := make([]blockQ8_0, nb)
	got := make([]blockQ8_0, nb)
	quantizeRowQ8_0Generic(x, want)
	setCorr(want, -8)
	quantizeRowQ8_0Corr(x, got, -8)
	for i := range want {
		if math.Float32bits(got[i].d) != math.Float32bits(want[i].d) || got[i].qs != want[i].qs || got[i].corr != want[i].corr {
			t.Fatalf("block %d: got d=%g corr %d %v, want d=%g corr %d %v", i, got[i].d, got[i].corr, got[i].qs, want[i].d, want[i].corr, want[i].qs)
		}
	}
}

// TestQuantizeRowQ8_1Asm checks the assembly Q8_1 quantizer against the Go
// reference bit for bit, on the blocks of TestQuantizeRowQ8_0Asm.
func TestQuantizeRowQ8_1Asm(t *testing.T) {
	if hostISA == Generic {
		t.Skip("no assembly quantizer on this CPU/GOARCH")
	}
	const nb = 64
	x := edgeQ8Acts(nb)
	want := make([]blockQ8_1, nb)
	got := make([]blockQ8_1, nb)
	quantizeRowQ8_1Generic(x, want)
	quantizeRowQ8_1(x, got)
	for i := range want {
		if math.Float32bits(got[i].d) != math.Float32bits(want[i].d) || math.Float32bits(got[i].s) != math.Float32bits(want[i].s) || got[i].qs != want[i].qs {
			t.Fatalf("block %d: got d=%g s=%g %v, want d=%g s=%g %v", i, got[i].d, got[i].s, got[i].qs, want[i].d, want[i].s, want[i].qs)
		}
	}
}

// edgeQ8Acts returns nb blocks of 32 activations: random, all zero, one
// nonzero value, values exactly at rounding halves, tiny (subnormal f16
// scale) and huge magnitudes.
func edgeQ8Acts(nb int) []float32 {
	rng := rand.New(rand.NewPCG(7, 8))
	x := randomActs(rng, nb*32)
	clear(x[0:32])
	x[40] = -3
	for j := range 32 {
		x[64+j] = float32(j-16) + 0.5 // halves: v·127/amax is not exact, but close
		x[96+j] = float32(j%3-1) * 1e-6
		x[128+j] = float32(j-15) * 1e30
		x[160+j] = float32(j) * 127 / 31 // q exactly j·127/31 …
	}
	for i := 6 * 32; i < 10*32; i++ {
		x[i] = float32(rng.IntN(255)-127) * 0.25 // many exact halves after scaling
	}
	return x
}

// TestQuantizeRowQ8_KAsm checks the assembly Q8_K quantizer against the Go
// reference bit for bit: random blocks, an all-zero block, ties for the
// largest magnitude with both signs (the first one decides the sign), and a
// block whose largest value is the last one.
func TestQuantizeRowQ8_KAsm(t *testing.T) {
	if unsafe.Sizeof(blockQ8_K{}) != 292 || unsafe.Offsetof(blockQ8_K{}.qs) != 4 {
		t.Fatalf("blockQ8_K layout changed: the assembly assumes d at 0, qs at 4, 292 bytes")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	const nb = 12
	x := randomActs(rng, nb*QK_K)
	clear(x[QK_K : 2*QK_K])
	x[2*QK_K+5], x[2*QK_K+9] = -40, 40
	x[3*QK_K+9], x[3*QK_K+5] = -40, 40
	x[4*QK_K+QK_K-1] = 1e3
	for i := 5 * QK_K; i < 6*QK_K; i++ {
		x[i] = float32(rng.IntN(255)-127) * 0.5
	}
	want := make([]blockQ8_K, nb)
	got := make([]blockQ8_K, nb)
	quantizeRowQ8_KGeneric(x, want)
	quantizeRowQ8_K(x, got)
	for i := range want {
		if math.Float32bits(got[i].d) != math.Float32bits(want[i].d) || got[i].qs != want[i].qs || got[i].bsums != want[i].bsums {
			t.Fatalf("block %d: got d=%g, want d=%g; qs equal %v, bsums equal %v", i, got[i].d, want[i].d, got[i].qs == want[i].qs, got[i].bsums == want[i].bsums)
		}
	}
}
