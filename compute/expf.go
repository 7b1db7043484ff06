package compute

import "math"

// Expf is glibc's expf on x86-64 with FMA (__expf_fma), which ggml's CPU
// flash attention calls for its softmax: ARM's optimized-routines
// math/expf.c (Copyright (c) 2017-2018, Arm Limited, MIT), with GCC's
// fused multiply-adds. It is not always the correctly rounded e^x: about
// one float in 13,000 of [−45, 0) differs in the last bit.
func Expf(x float32) float32 {
	const (
		n       = 32
		invLn2N = 0x1.71547652b82fep+0 * n
		shift   = 0x1.8p+52
		c0      = 0x1.c6af84b912394p-5 / n / n / n
		c1      = 0x1.ebfce50fac4f3p-3 / n / n
		c2      = 0x1.62e42ff0c52d6p-1 / n
	)
	abstop := math.Float32bits(x) >> 20 & 0x7ff
	if abstop >= 0x42b { // |x| ≥ 88 or NaN
		switch {
		case math.IsInf(float64(x), -1):
			return 0
		case abstop >= 0x7f8:
			return x + x
		case x > 0x1.62e42ep6:
			return float32(math.Inf(1))
		case x < -0x1.9fe368p6:
			return 0
		}
	}
	xd := float64(x)
	z := float64(invLn2N * xd) // explicit conversion: no fused multiply-add, as amd64 computes it
	kd := z + shift
	ki := math.Float64bits(kd)
	kd -= shift
	r := z - kd
	t := exp2fTab[ki%n] + ki<<(52-5)
	s := math.Float64frombits(t)
	z = math.FMA(c0, r, c1)
	r2 := r * r
	y := math.FMA(c2, r, 1)
	y = math.FMA(z, r2, y)
	return float32(y * s)
}

// exp2fTab is __exp2f_data.tab: uint(2^(i/32)) − (i << 47).
var exp2fTab = [32]uint64{
	0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
	0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
	0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
	0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
	0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
	0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
	0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
	0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
}
