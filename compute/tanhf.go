package compute

import "math"

// Tanhf is glibc's tanhf (2.36, sysdeps/ieee754/flt-32/s_tanhf.c: fdlibm's
// float tanh, Copyright (C) 1993 by Sun Microsystems, Inc., freely
// granted), which ggml's tanh and its flash attention's soft-capping call:
// about a fifth of its results differ from the correctly rounded value in
// the last bit. Every operation is a float32 one, rounded as C rounds it
// (the conversions keep Go from fusing a product into an add).
func Tanhf(x float32) float32 {
	jx := math.Float32bits(x)
	ix := jx & 0x7fffffff
	var z float32
	switch {
	case ix >= 0x7f800000: // inf or NaN
		if jx>>31 == 0 {
			return 1/x + 1
		}
		return 1/x - 1
	case ix == 0:
		return x
	case ix < 0x24000000: // |x| < 2^-55
		return x * (1 + x)
	case ix >= 0x41b00000: // |x| ≥ 22
		z = 1
	case ix >= 0x3f800000: // |x| ≥ 1
		t := expm1f(2 * abs32(x))
		z = 1 - 2/(t+2)
	default:
		t := expm1f(-2 * abs32(x))
		z = -t / (t + 2)
	}
	if jx>>31 != 0 {
		return -z
	}
	return z
}

// expm1f is glibc's __expm1f (flt-32/s_expm1f.c, fdlibm) for the finite
// arguments Tanhf gives it (|x| < 44).
func expm1f(x float32) float32 {
	const (
		ln2Hi  = float32(6.9313812256e-01)
		ln2Lo  = float32(9.0580006145e-06)
		invln2 = float32(1.4426950216e+00)
		q1     = float32(-3.3333335072e-02)
		q2     = float32(1.5873016091e-03)
		q3     = float32(-7.9365076090e-05)
		q4     = float32(4.0082177293e-06)
		q5     = float32(-2.0109921195e-07)
	)
	hx := math.Float32bits(x)
	neg := hx>>31 != 0
	hx &= 0x7fffffff
	if hx >= 0x4195b844 && neg { // x < −27·ln2
		return -1
	}
	var hi, lo, c float32
	var k int32
	switch {
	case hx > 0x3eb17218: // |x| > ln2/2
		if hx < 0x3F851592 { // and |x| < 1.5·ln2
			if !neg {
				hi, lo, k = x-ln2Hi, ln2Lo, 1
			} else {
				hi, lo, k = x+ln2Hi, -ln2Lo, -1
			}
		} else {
			half := float32(0.5)
			if neg {
				half = -0.5
			}
			k = int32(float32(invln2*x) + half)
			t := float32(k)
			hi = x - float32(t*ln2Hi)
			lo = t * ln2Lo
		}
		x = hi - lo
		c = (hi - x) - lo
	case hx < 0x33000000: // |x| < 2^-25
		return x
	}
	hfx := 0.5 * x
	hxs := float32(x * hfx) // explicit conversion: no fused multiply-add, as amd64 computes it
	r1 := 1 + float32(hxs*(q1+float32(hxs*(q2+float32(hxs*(q3+float32(hxs*(q4+float32(hxs*q5)))))))))
	t := 3 - float32(r1*hfx)
	e := float32(hxs * ((r1 - t) / (6 - float32(x*t))))
	if k == 0 {
		return x - (float32(x*e) - hxs)
	}
	e = float32(x*(e-c)) - c
	e -= hxs
	switch {
	case k == -1:
		return float32(0.5*(x-e)) - 0.5
	case k == 1:
		if x < -0.25 {
			return -2 * (e - (x + 0.5))
		}
		return 1 + float32(2*(x-e))
	case k <= -2 || k > 56:
		y := 1 - (e - x)
		y = math.Float32frombits(math.Float32bits(y) + uint32(k<<23))
		return y - 1
	case k < 23:
		t := math.Float32frombits(uint32(0x3f800000 - (0x1000000 >> k))) // 1 − 2^−k
		y := t - (e - x)
		return math.Float32frombits(math.Float32bits(y) + uint32(k<<23))
	default:
		t := math.Float32frombits(uint32((0x7f - k) << 23)) // 2^−k
		y := x - (e + t)
		y += 1
		return math.Float32frombits(math.Float32bits(y) + uint32(k<<23))
	}
}
