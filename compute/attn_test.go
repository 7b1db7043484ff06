package compute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// f16Acts returns n random f16-valued floats (as the KV cache holds).
func f16Acts(rng *rand.Rand, n int) []float32 {
	x := randomActs(rng, n)
	for i, v := range x {
		x[i] = RoundF16(v)
	}
	return x
}

// f16Rows returns n random f16 values as the KV cache stores them (bits).
func f16Rows(rng *rand.Rand, n int) []uint16 {
	x := randomActs(rng, n)
	h := make([]uint16, n)
	F16s(h, x)
	return h
}

// TestAttentionKernels checks DotRows and VKQRowsF16 against their
// Go versions bit for bit, over head sizes with and without an assembly
// path, strided rows, and rescales that are and are not 1.
func TestAttentionKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, hd := range []int{8, 32, 40, 64, 72, 128, 6} {
		for _, n := range []int{1, 5, 16} {
			t.Run(fmt.Sprintf("hd%d/n%d", hd, n), func(t *testing.T) {
				stride := hd*4 + 3
				rows := f16Rows(rng, n*stride)
				q := f16Acts(rng, hd)
				got, want := make([]float32, n), make([]float32, n)
				DotRows(got, q, rows, stride, n)
				dotRowsGeneric(want, q, rows, stride, n)
				same(t, "DotRows", got, want)

				checkVKQ(t, rng, "VKQRowsF16", n, hd, f16Acts,
					func(out, ms, vs []float32) { VKQRowsF16(out, rows, stride, ms, vs) },
					func(out, ms, vs []float32) { vkqRowsGeneric(out, rows, stride, ms, vs) })
			})
		}
	}
}

// checkVKQ checks kernel(out, ms, vs), a VKQ over n rows, against ref bit
// for bit: vs random, ms randomRescales, out starting at acts (hd values).
func checkVKQ(t *testing.T, rng *rand.Rand, what string, n, hd int, acts func(*rand.Rand, int) []float32,
	kernel, ref func(out, ms, vs []float32)) {
	t.Helper()
	vs := randomActs(rng, n)
	ms := randomRescales(rng, n)
	init := acts(rng, hd)
	got, want := slices.Clone(init), slices.Clone(init)
	kernel(got, ms, vs)
	ref(want, ms, vs)
	same(t, what, got, want)
}

// randomRescales returns n online-softmax rescales: 1, but every third
// from the second one in [0, 1).
func randomRescales(rng *rand.Rand, n int) []float32 {
	ms := make([]float32, n)
	for j := range ms {
		ms[j] = 1
		if j%3 == 1 {
			ms[j] = float32(rng.Float64())
		}
	}
	return ms
}

// TestAttnGroupKernels checks DotRowsGroup and VKQRowsF16Group against
// DotRows and VKQRowsF16 head by head, bit for bit, for every group size up
// to 4 on head sizes with and without group kernels, strided rows, a query
// of zeros (the sign of a zero score), and rescales that are and are not 1.
func TestAttnGroupKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, hd := range []int{64, 128, 256, 32} {
		for g := 1; g <= 4; g++ {
			for _, n := range []int{1, 7, 16} {
				t.Run(fmt.Sprintf("hd%d/g%d/n%d", hd, g, n), func(t *testing.T) {
					stride := hd*2 + 5
					rows := f16Rows(rng, n*stride)
					q := f16Acts(rng, g*hd)
					clear(q[:hd/2]) // zero products of both signs
					for i := range q[hd/2 : hd] {
						q[hd/2+i] = float32(math.Copysign(0, -1))
					}
					const ostride = 19
					got, want := make([]float32, g*ostride), make([]float32, g*ostride)
					DotRowsGroup(got, ostride, q, g, rows, stride, n)
					for i := range g {
						DotRows(want[i*ostride:i*ostride+n], q[i*hd:(i+1)*hd], rows, stride, n)
					}
					same(t, "DotRowsGroup", got, want)

					checkGroupVKQ(t, rng, "VKQRowsF16Group", g, hd, n, ostride, f16Acts,
						func(out, ms, vs []float32) { VKQRowsF16Group(out, g, rows, stride, ms, vs, ostride, n) },
						func(out, ms, vs []float32) { VKQRowsF16(out, rows, stride, ms, vs) })
				})
			}
		}
	}
}

// checkGroupVKQ checks group(out, ms, vs), g heads' VKQ over n rows,
// against one(out, ms, vs) head by head, bit for bit: out starts at acts
// (g·hd values), the rescales ms are 1 but a third of them in [0, 1), the
// weights vs random; head i's ms and vs start at i·ostride.
func checkGroupVKQ(t *testing.T, rng *rand.Rand, what string, g, hd, n, ostride int,
	acts func(*rand.Rand, int) []float32, group, one func(out, ms, vs []float32)) {
	t.Helper()
	ms, vs := make([]float32, g*ostride), randomActs(rng, g*ostride)
	for j := range ms {
		ms[j] = 1
		if rng.IntN(3) == 0 {
			ms[j] = float32(rng.Float64())
		}
	}
	init := acts(rng, g*hd)
	got, want := append([]float32(nil), init...), append([]float32(nil), init...)
	group(got, ms, vs)
	for i := range g {
		o := i * ostride
		one(want[i*hd:(i+1)*hd], ms[o:o+n], vs[o:o+n])
	}
	same(t, what, got, want)
}

// TestF16s checks the vector conversion against FP32ToFP16 on every 97th
// float32 bit pattern (NaNs only as NaNs), and on slices of every length up
// to 17 (the tail past the last multiple of 8).
func TestF16s(t *testing.T) {
	sweepF16(t, F16s, func(src []float32, dst []uint16) {
		t.Helper()
		for i, v := range src {
			want, got := FP32ToFP16(v), dst[i]
			if got != want && !(v != v && got&0x7c00 == 0x7c00 && got&0x3ff != 0) {
				t.Fatalf("F16s(%g = %#08x) = %#04x, FP32ToFP16 %#04x", v, math.Float32bits(v), got, want)
			}
		}
	})
}

func same(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %g, Go version %g", what, i, got[i], want[i])
		}
	}
}

// TestSiLUMulAsm checks the assembly SwiGLU against the Go version bit for
// bit: random values over ±100, zero, ±Inf, NaN, and the arguments where
// ggml_v_expf's special cases begin (|n| near 192) and its results turn
// subnormal.
func TestSiLUMulAsm(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const n = 4096
	gate, up := make([]float32, n), make([]float32, n)
	for i := range gate {
		gate[i] = float32((rng.Float64()*2 - 1) * 100)
		up[i] = float32(rng.NormFloat64())
	}
	copy(gate, []float32{0, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 88.7, -88.7, 87.3, -87.3,
		103.9, -103.9, 133.1, -133.1, 133.2, -133.2, 1e-40, -1e-40})
	got, want := make([]float32, n), make([]float32, n)
	SiLUMul(got, gate, up)
	siluMulGeneric(want, gate, up)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("[%d] gate %g: got %g, Go %g", i, gate[i], got[i], want[i])
		}
	}
}

// TestExp checks Exp (the assembly where the CPU has it) against Expf bit
// for bit on a million arguments in [−110, 0], every 1009th float of
// [−104.1, 89.1] and edge values (0, −0, ±Inf, NaN, the underflow and
// overflow boundaries); and that the two differ from float32(math.Exp) by
// at most one ulp.
func TestExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	x := make([]float32, 1<<20)
	for i := range x {
		x[i] = -float32(rng.Float64() * 110)
	}
	copy(x, []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(-1)), float32(math.NaN()), float32(math.Inf(1)),
		-103.27893, -103.97208, -0x1.9fe368p6, -0x1.9fe366p6, -104, -87.33655, 88.72283, 88.7229, 89, -1e-30, -5, -6, -7})
	for b := math.Float32bits(-104.1); b > 0x80000000; b -= 1009 {
		x = append(x, math.Float32frombits(b))
	}
	for b := uint32(0); b < math.Float32bits(89.1); b += 1009 {
		x = append(x, math.Float32frombits(b))
	}
	got := append([]float32(nil), x...)
	Exp(got)
	var off int
	for i, v := range x {
		want := Expf(v)
		if math.Float32bits(got[i]) != math.Float32bits(want) && !(got[i] != got[i] && want != want) {
			t.Fatalf("Exp(%g) = %g (%08x), Expf %g (%08x)", v, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
		if cr := float32(math.Exp(float64(v))); cr != want && cr == cr {
			if d := math.Float32bits(want) - math.Float32bits(cr); d+1 > 2 {
				t.Fatalf("Expf(%g) = %g, math.Exp %g", v, want, cr)
			}
			off++
		}
	}
	t.Logf("%d of %d values one ulp from math.Exp", off, len(x))
	if off == 0 {
		t.Errorf("Expf equals float32(math.Exp) everywhere: not glibc's expf")
	}
}

// TestOnlineSoftmax checks the assembly passes of OnlineSoftmax against the
// Go ones bit for bit: rising, falling and random scores (the max moving
// inside and outside eight-lane chunks), equal scores, ±Inf and NaN, every
// length up to 40.
func TestOnlineSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	inputs := map[string]func(j int) float32{
		"random":  func(int) float32 { return float32(rng.NormFloat64() * 8) },
		"rising":  func(j int) float32 { return float32(j) * 0.75 },
		"falling": func(j int) float32 { return -float32(j) * 0.5 },
		"equal":   func(int) float32 { return 3 },
		"special": func(j int) float32 {
			return []float32{float32(math.Inf(-1)), 2, float32(math.NaN()), float32(math.Inf(1)), -1, 0}[j%6]
		},
		"late": func(j int) float32 {
			if j%13 == 12 {
				return float32(j)
			}
			return float32(rng.Float64())
		},
	}
	for name, f := range inputs {
		for n := 1; n <= 40; n++ {
			raw := make([]float32, n)
			for j := range raw {
				raw[j] = RoundF16(f(j))
			}
			vs, ms := append([]float32(nil), raw...), make([]float32, n)
			S := OnlineSoftmax(vs, ms, 0.125)
			wvs, wms := append([]float32(nil), raw...), make([]float32, n)
			softmaxScanGeneric(wvs, wms, 0.125)
			Exp(wvs)
			wS := softmaxSumGeneric(wvs, wms)
			what := fmt.Sprintf("%s/n%d", name, n)
			same(t, what+" vs", vs, wvs)
			same(t, what+" ms", ms, wms)
			same(t, what+" S", []float32{S}, []float32{wS})
		}
	}
}
