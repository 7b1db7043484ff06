package compute

import "sync"

// geluF16 is ggml's ggml_table_gelu_f16: for every half h, the half nearest
// gelu(float(h)) (tanh approximation), built on first use.
var geluF16 = sync.OnceValue(func() *[1 << 16]uint16 {
	t := new([1 << 16]uint16)
	for h := range t {
		t[h] = FP32ToFP16(geluTanh(FP16ToFP32(uint16(h))))
	}
	return t
})

// geluTanh is ggml_gelu_f32: 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))),
// each operation rounded to float32 as in C.
func geluTanh(x float32) float32 {
	const (
		coefA       = float32(0.044715)
		sqrt2OverPi = float32(0.79788456080286535587989211986876)
	)
	// GCC contracts 1 + (coefA·x)·x into one fused multiply-add.
	inner := sqrt2OverPi * x * fma32(coefA*x, x, 1)
	return 0.5 * x * (1 + Tanhf(inner))
}

// GeGLU computes dst[i] = gelu(gate[i]) * up[i], the GeGLU activation of
// Gemma's feed-forward block, as ggml_vec_geglu_f32 does on the CPU
// (GGML_GELU_FP16): 0 for gate ≤ −10, gate·up for gate ≥ 10, else gelu
// looked up for gate rounded to half, the half result widened, times up.
func GeGLU(dst, gate, up []float32) {
	t := geluF16()
	for i, g := range gate {
		switch {
		case g <= -10:
			dst[i] = 0
		case g >= 10:
			dst[i] = g * up[i]
		default:
			dst[i] = FP16ToFP32(t[FP32ToFP16(g)]) * up[i]
		}
	}
}

// SoftCap computes x[i] = c·tanh(x[i]·(1/c)), Gemma 2's logit soft-capping,
// as llama.cpp builds it from ggml_scale, ggml_tanh and ggml_scale.
func SoftCap(x []float32, c float32) {
	inv := 1 / c
	for i, v := range x {
		x[i] = Tanhf(v*inv) * c
	}
}
