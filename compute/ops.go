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
	scale := float32(1.0 / math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = v * scale * w[i]
	}
}

// Rope rotates one head vector x (len headDim) in place for position pos.
// Only the first nRot values are rotated. theta_i = pos * base^(-2i/nRot) /
// factors[i] * scale, where factors (len nRot/2) may be nil. neox selects the
// rotate-half pairing (i, i+nRot/2) of GPT-NeoX and Hugging Face checkpoints;
// otherwise adjacent pairs (2i, 2i+1) are rotated, as GGUF llama files expect.
func Rope(x []float32, pos int, nRot int, base, scale float32, factors []float32, neox bool) {
	half := nRot / 2
	thetaScale := math.Pow(float64(base), -2.0/float64(nRot))
	theta := float64(pos)
	for i := 0; i < half; i++ {
		t := theta * float64(scale)
		if factors != nil {
			t /= float64(factors[i])
		}
		sin, cos := math.Sincos(t)
		c, s := float32(cos), float32(sin)
		a, b := 2*i, 2*i+1
		if neox {
			a, b = i, i+half
		}
		x0, x1 := x[a], x[b]
		x[a] = x0*c - x1*s
		x[b] = x0*s + x1*c
		theta *= thetaScale
	}
}

// SiLUMul computes dst[i] = silu(gate[i]) * up[i], the SwiGLU activation.
func SiLUMul(dst, gate, up []float32) {
	for i, g := range gate {
		dst[i] = g / (1 + float32(math.Exp(float64(-g)))) * up[i]
	}
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
