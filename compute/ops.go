package compute

import "math"

// RMSNorm writes x / rms(x) * w into dst (len n each). Sums in float64, as
// ggml's reference does (ggml_float is double).
func RMSNorm(dst, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	// 1.0f/sqrtf(mean + eps): two float32 roundings, as ggml does.
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = v * scale * w[i]
	}
}

// Rotary position embedding, in two steps: RopeTable computes a position's
// cosines and sines once, RopeApply rotates each head vector with them.
// theta_i = pos * base^(-2i/nRot) / factors[i] * scale, where factors (len
// nRot/2) may be nil; only the first nRot values of a head are rotated.
//
// The arithmetic is ggml's rope_f32 on x86: theta in float32, multiplied by
// theta_scale = powf(base, -2/nRot) at each step; glibc's cosf/sinf of the
// float32 angle (Cosf, Sinf: not always the correctly rounded values); and the rotation with the FMA contraction GCC applies to
// x0*cos - x1*sin and x0*sin + x1*cos.

// RopeTable writes the cosines and sines of position pos's len(cs)/2 angles
// into cs (cs[2i] the cosine, cs[2i+1] the sine) with ggml's arithmetic, so
// that the heads of a token, in every layer, can share them (RopeApply).
func RopeTable(cs []float32, pos int, base, scale float32, factors []float32) {
	nRot := len(cs)
	thetaScale := float32(math.Pow(float64(base), float64(float32(-2)/float32(nRot))))
	theta := float32(pos)
	for i := range nRot / 2 {
		t := theta
		if factors != nil {
			t /= factors[i]
		}
		t = scale * t
		cs[2*i], cs[2*i+1] = Cosf(t), Sinf(t)
		theta *= thetaScale
	}
}

// RopeApply rotates the first len(cs) values of one head vector x in place
// by the angles of a RopeTable. neox selects the rotate-half pairing (i,
// i+nRot/2) of GPT-NeoX and Hugging Face checkpoints; otherwise adjacent
// pairs (2i, 2i+1) are rotated, as GGUF llama files expect.
func RopeApply(x, cs []float32, neox bool) {
	half := len(cs) / 2
	for i := range half {
		c, s := cs[2*i], cs[2*i+1]
		a, b := 2*i, 2*i+1
		if neox {
			a, b = i, i+half
		}
		x0, x1 := x[a], x[b]
		x[a] = fma32(x0, c, -float32(x1*s))
		x[b] = fma32(x0, s, float32(x1*c))
	}
}

// SiLUMul computes dst[i] = silu(gate[i]) * up[i], the SwiGLU activation, as
// ggml_vec_swiglu_f32 does on AVX512: x/(1 + e^-x) with ggml_v_expf's
// polynomial for whole groups of 16 values, glibc's expf (Expf) for the
// rest. Call it on one row at a time: which values take which path depends
// on the row length.
func SiLUMul(dst, gate, up []float32) {
	n16 := len(gate) - len(gate)%16
	if !siluMul16(dst, gate, up, n16) {
		siluMulGeneric(dst[:n16], gate[:n16], up[:n16])
	}
	for i := n16; i < len(gate); i++ {
		g := gate[i]
		dst[i] = g / (1 + Expf(-g)) * up[i]
	}
}

// siluMulGeneric is SiLUMul's vector part in Go: every value through vExpf.
func siluMulGeneric(dst, gate, up []float32) {
	for i, g := range gate {
		dst[i] = g / (1 + vExpf(-g)) * up[i]
	}
}

// vExpf is ggml_v_expf (AVX512 form) for one lane: e^x from a degree-5
// polynomial on the reduced argument, scaled by 2^n.
func vExpf(x float32) float32 {
	j, n := vExpfParts(x)
	if abs32(n) > 192 {
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	// j·2ⁿ in float64 is exact (|n| ≤ 192), then rounded once to float32:
	// math.Ldexp's value, without its call.
	return float32(float64(j) * math.Float64frombits(uint64(int64(n)+1023)<<52))
}

// vExpfParts is vExpf before its scaling: e^x = j·2ⁿ (for |n| ≤ 192).
func vExpfParts(x float32) (j, n float32) {
	const r = 0x1.8p23
	z := fma32(x, 0x1.715476p+0, r)
	n = z - r
	b := fma32(-n, 0x1.7f7d1cp-20, fma32(-n, 0x1.62e4p-1, x))
	u := b * b
	j = fma32(fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u,
		fma32(0x1.ffffecp-1, b, 1))
	return j, n
}

// Add computes dst[i] += x[i].
func Add(dst, x []float32) {
	for i := addVec(dst, x); i < len(x); i++ {
		dst[i] += x[i]
	}
}
