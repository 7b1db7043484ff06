package compute

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fmafCases returns operand triples for fmaf: random over wide exponent
// ranges, ggmlVExpf's own operand ranges, and constructed cases where the
// float64 sum lands exactly halfway between two float32 (double rounding)
// in the normal and subnormal ranges.
func fmafCases() [][3]float32 {
	r := rand.New(rand.NewPCG(7, 8))
	rnd := func(emin, emax int) float32 {
		m := 1 + r.Float64()
		if r.IntN(2) == 0 {
			m = -m
		}
		return float32(math.Ldexp(m, emin+r.IntN(emax-emin+1)))
	}
	cs := [][3]float32{
		{64 * (1 + 0x1p-23), 1 - 0x1p-23, 0x1p30 + 128},   // 2³⁰+192−2⁻⁴⁰: down to 2³⁰+128
		{-64 * (1 + 0x1p-23), 1 - 0x1p-23, -0x1p30 - 128}, // the same, negative
		{64 * (1 + 0x1p-23), 1 + 0x1p-23, 0x1p30},         // 2³⁰+64+2⁻³⁹: up
		{0x1p-140 * (1 + 0x1p-23), 1 - 0x1p-23, 0x1p-140}, // a subnormal result
		{0x1p-149, 0.5, 0x1p-148},
		{0x1p-149, 0.5 + 0x1p-24, 0x1p-148},
		{0x1p-149, 0.5 - 0x1p-25, 0},
		{float32(math.Inf(1)), 2, 1}, {0, 0, 0}, {0, -1, 0},
	}
	for range 300000 {
		cs = append(cs, [3]float32{rnd(-60, 60), rnd(-60, 60), rnd(-100, 100)})
		cs = append(cs, [3]float32{rnd(-75, -60), rnd(-75, -60), rnd(-149, -120)})
		// ggmlVExpf's: z = x·log2e + r, b's, the polynomial's and j·k + k.
		x := rnd(-8, 7)
		cs = append(cs, [3]float32{x, 0x1.715476p+0, 0x1.8p23})
		n := float32(math.Round(float64(x) * math.Log2E))
		cs = append(cs, [3]float32{-n, 0x1.62e4p-1, x}, [3]float32{-n, 0x1.7f7d1cp-20, rnd(-12, -1)})
		cs = append(cs, [3]float32{rnd(-12, -1), rnd(-12, -1), rnd(-8, -1)})
		k := float32(math.Ldexp(1, r.IntN(253)-126))
		cs = append(cs, [3]float32{rnd(-12, -2), k, k})
		// Near-cancellation and halfway hunting: c ≈ −a·b to within a few ulps.
		a, b := rnd(-20, 20), rnd(-20, 20)
		c := -float32(float64(a) * float64(b))
		cs = append(cs, [3]float32{a, b, math.Float32frombits(math.Float32bits(c) + uint32(r.IntN(5)) - 2)})
		// Halfway by construction: c = M·2ᵉ (ulp 2ᵉ) and a·b = 2ᵉ⁻¹(1 − 2⁻⁴⁶),
		// which float64 rounds to c's half ulp.
		e := r.IntN(40) - 20
		big := float32(math.Ldexp(float64(1<<23+r.IntN(1<<23)), e))
		a = float32(math.Ldexp(1+0x1p-23, e-1))
		if r.IntN(2) == 0 {
			a, big = -a, -big
		}
		cs = append(cs, [3]float32{a, 1 - 0x1p-23, big})
		// The same in the subnormal range: c = M·2⁻¹⁴⁹, a·b = 2⁻¹⁵⁰(1 − 2⁻⁴⁶).
		sub := math.Float32frombits(uint32(1 + r.IntN(1<<23)))
		cs = append(cs, [3]float32{0x1p-75 * (1 + 0x1p-23), 0x1p-75 * (1 - 0x1p-23), sub})
	}
	return cs
}

// TestFmaf checks fmaf against the CPU's VFMADD231SS bit for bit, and that
// its halfway cases are ones float32(math.FMA(…)) rounds wrongly.
func TestFmaf(t *testing.T) {
	if hostISA < AVX2 {
		t.Skip("no FMA")
	}
	double := 0
	for _, c := range fmafCases() {
		got, want := fmaf(c[0], c[1], c[2]), fmafFMA(c[0], c[1], c[2])
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fmaf(%x, %x, %x) = %x, want %x", c[0], c[1], c[2], got, want)
		}
		if math.Float32bits(fma32(c[0], c[1], c[2])) != math.Float32bits(want) {
			double++
		}
	}
	if double < 3 {
		t.Errorf("only %d cases where rounding twice differs: the halfway cases are not exercised", double)
	}
	t.Logf("%d cases where float32(math.FMA) rounds twice wrongly", double)
}

// vExpfInputs returns arguments for ggmlVExpf: a fine sweep of [−200, 100],
// the thresholds |n| = 126 and 192 and their neighbours, ±Inf, and random
// values over float32's range.
func vExpfInputs() []float32 {
	var xs []float32
	for x := float32(-200); x < 100; x += 0x1p-9 {
		xs = append(xs, x)
	}
	for _, n := range []float64{126, 126.5, 127, 192, 192.5, 193} {
		for _, s := range []float64{-1, 1} {
			c := float32(s * n * math.Ln2)
			for d := -64; d <= 64; d++ {
				xs = append(xs, math.Float32frombits(uint32(int32(math.Float32bits(c))+int32(d))))
			}
		}
	}
	xs = append(xs, float32(math.Inf(-1)), float32(math.Inf(1)), 0, float32(math.Copysign(0, -1)),
		-0x1.9fe368p6, 0x1.62e42ep6, -87.33654, -103.97, 88.38, -1e30, 1e30, math.MaxFloat32, -math.MaxFloat32)
	r := rand.New(rand.NewPCG(9, 10))
	for range 100000 {
		xs = append(xs, math.Float32frombits(r.Uint32()&^(0xff<<23)|uint32(r.IntN(0x90))<<23))
	}
	for len(xs)%8 != 0 {
		xs = append(xs, 0)
	}
	return xs
}

// TestGgmlVExpfAsm checks softMaxExpAVX2's eights against ggmlVExpf lane
// for lane, bit for bit, in eights all on ggml_v_expf's short path and
// mixed with lanes that take its 126 < |n| branch.
func TestGgmlVExpfAsm(t *testing.T) {
	if hostISA < AVX2 {
		t.Skip("no AVX2")
	}
	xs := vExpfInputs()
	r := rand.New(rand.NewPCG(11, 12))
	for pass := range 2 {
		in := append([]float32(nil), xs...)
		if pass == 1 {
			r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		}
		got := append([]float32(nil), in...)
		softMaxExpAVX2(&got[0], len(got), 1, 0)
		for i, x := range in {
			if want := ggmlVExpf(x); math.Float32bits(got[i]) != math.Float32bits(want) &&
				!(math.IsNaN(float64(want)) && math.IsNaN(float64(got[i]))) {
				t.Fatalf("pass %d: ggml_v_expf(%x) = %x (asm), ggmlVExpf %x", pass, x, got[i], want)
			}
		}
	}
}
