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

// Rope rotates one head vector x (len headDim) in place for position pos.
// Only the first nRot values are rotated. theta_i = pos * base^(-2i/nRot) /
// factors[i] * scale, where factors (len nRot/2) may be nil. neox selects the
// rotate-half pairing (i, i+nRot/2) of GPT-NeoX and Hugging Face checkpoints;
// otherwise adjacent pairs (2i, 2i+1) are rotated, as GGUF llama files expect.
//
// The arithmetic is ggml's rope_f32 on x86: theta in float32, multiplied by
// theta_scale = powf(base, -2/nRot) at each step; cosf/sinf of the float32
// angle; and the rotation with the FMA contraction GCC applies to
// x0*cos - x1*sin and x0*sin + x1*cos.
func Rope(x []float32, pos int, nRot int, base, scale float32, factors []float32, neox bool) {
	var buf [256]float32
	cs := buf[:0]
	if nRot <= len(buf) {
		cs = buf[:nRot]
	} else {
		cs = make([]float32, nRot)
	}
	RopeTable(cs, pos, base, scale, factors)
	RopeApply(x, cs, neox)
}

// RopeTable writes the cosines and sines of position pos's len(cs)/2 angles
// into cs (cs[2i] the cosine, cs[2i+1] the sine) with Rope's arithmetic, so
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
		cs[2*i], cs[2*i+1] = float32(math.Cos(float64(t))), float32(math.Sin(float64(t)))
		theta *= thetaScale
	}
}

// RopeApply rotates the first len(cs) values of x by the angles of a
// RopeTable, as Rope does.
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
// polynomial for whole groups of 16 values, expf for the rest. Call it on
// one row at a time: which values take which path depends on the row length.
func SiLUMul(dst, gate, up []float32) {
	n16 := len(gate) - len(gate)%16
	if !siluMul16(dst, gate, up, n16) {
		siluMulGeneric(dst[:n16], gate[:n16], up[:n16])
	}
	for i := n16; i < len(gate); i++ {
		g := gate[i]
		dst[i] = g / (1 + float32(math.Exp(float64(-g)))) * up[i]
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
	const r = 0x1.8p23
	z := fma32(x, 0x1.715476p+0, r)
	n := z - r
	b := fma32(-n, 0x1.7f7d1cp-20, fma32(-n, 0x1.62e4p-1, x))
	if abs32(n) > 192 {
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	u := b * b
	j := fma32(fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u,
		fma32(0x1.ffffecp-1, b, 1))
	return float32(math.Ldexp(float64(j), int(n)))
}

// Softmax normalises x in place.
func Softmax(x []float32) {
	max := float32(math.Inf(-1))
	for _, v := range x {
		if v > max {
			max = v
		}
	}
	var sum float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - max)))
		x[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// Add computes dst[i] += x[i].
func Add(dst, x []float32) {
	for i, v := range x {
		dst[i] += v
	}
}

// Dot is the float32 inner product of a and b (len(a) values).
func Dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(a)
	b = b[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Axpy computes dst[i] += a * x[i].
func Axpy(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}
