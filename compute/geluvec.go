package compute

import "sync"

// Gelu sets x[i] = gelu(x[i]) as ggml_vec_gelu_f32 computes it with
// GGML_GELU_FP16: 0 at or below −10, x at or above 10, else ggml's half
// table at x rounded to half, widened: GeGLU(x, x, ones) bit for bit, with
// AVX2 and F16C where the CPU has them (geluvec_amd64.s).
func Gelu(x []float32) {
	n := geluAsm(x)
	if n == len(x) {
		return
	}
	t := geluF16()
	for i := n; i < len(x); i++ {
		g := x[i]
		switch {
		case g <= -10:
			x[i] = 0
		case g >= 10:
		default:
			x[i] = FP16ToFP32(t[FP32ToFP16(g)])
		}
	}
}

// geluF16Pad is geluF16 as a HalfTable (with its padding entry), for the
// assembly's gathers.
var geluF16Pad = sync.OnceValue(func() *HalfTable {
	t := new(HalfTable)
	copy(t[:], geluF16()[:])
	return t
})

// HalfTable is a function of a half-precision value as a table of halves,
// indexed by the value's bits, with a padding entry so that a 32-bit load
// at any entry stays inside it. MakeHalfTable builds one.
type HalfTable [1<<16 + 1]uint16

// MakeHalfTable tabulates f over every half: entry h is f at h widened,
// rounded back to half.
func MakeHalfTable(f func(float32) float32) *HalfTable {
	t := new(HalfTable)
	for h := range 1 << 16 {
		t[h] = FP32ToFP16(f(FP16ToFP32(uint16(h))))
	}
	return t
}

// Lookup sets x[i] to t's entry at x[i] rounded to half, widened: ggml's
// table-driven activations (GGML_GELU_QUICK_FP16's gelu_quick) bit for bit,
// eight at a time with AVX2 and F16C where the CPU has them.
func (t *HalfTable) Lookup(x []float32) {
	for i := lookupAsm(x, t); i < len(x); i++ {
		x[i] = FP16ToFP32(t[FP32ToFP16(x[i])])
	}
}
