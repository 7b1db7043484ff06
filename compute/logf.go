package compute

import "math"

// Logf is glibc's logf on x86-64 with FMA (__logf_fma), which llama.cpp
// calls for YaRN's rope corrections and magnitude scaling: ARM's
// optimized-routines math/logf.c (Copyright (c) 2017-2018, Arm Limited,
// MIT), with GCC's fused multiply-adds. It is not always the correctly
// rounded ln x: about one float in 5,000 differs in the last bit.
func Logf(x float32) float32 {
	const off = 0x3f330000
	ix := math.Float32bits(x)
	if ix == 0x3f800000 {
		return 0
	}
	if ix-0x00800000 >= 0x7f800000-0x00800000 { // x < 0x1p-126, inf or nan
		switch {
		case ix*2 == 0:
			return float32(math.Inf(-1))
		case ix == 0x7f800000:
			return x
		case ix&0x80000000 != 0 || ix*2 >= 0xff000000:
			return float32(math.NaN())
		}
		ix = math.Float32bits(x * 0x1p23) // subnormal: normalize
		ix -= 23 << 23
	}
	tmp := ix - off
	i := tmp >> (23 - 4) % 16
	k := int32(tmp) >> 23
	iz := ix - tmp&0xff800000
	invc, logc := logfTab[i][0], logfTab[i][1]
	z := float64(math.Float32frombits(iz))
	r := math.FMA(z, invc, -1)
	y0 := math.FMA(float64(k), logfLn2, logc)
	r2 := r * r
	y := math.FMA(logfPoly[1], r, logfPoly[2])
	y = math.FMA(logfPoly[0], r2, y)
	y = math.FMA(y, r2, y0+r)
	return float32(y)
}

// logfTab is __logf_data.tab: {1/c, ln c} of the 16 subintervals.
var logfTab = [16][2]float64{
	{0x1.661ec79f8f3bep+0, -0x1.57bf7808caadep-2},
	{0x1.571ed4aaf883dp+0, -0x1.2bef0a7c06ddbp-2},
	{0x1.49539f0f010bp+0, -0x1.01eae7f513a67p-2},
	{0x1.3c995b0b80385p+0, -0x1.b31d8a68224e9p-3},
	{0x1.30d190c8864a5p+0, -0x1.6574f0ac07758p-3},
	{0x1.25e227b0b8eap+0, -0x1.1aa2bc79c81p-3},
	{0x1.1bb4a4a1a343fp+0, -0x1.a4e76ce8c0e5ep-4},
	{0x1.12358f08ae5bap+0, -0x1.1973c5a611cccp-4},
	{0x1.0953f419900a7p+0, -0x1.252f438e10c1ep-5},
	{0x1p+0, 0x0p+0},
	{0x1.e608cfd9a47acp-1, 0x1.aa5aa5df25984p-5},
	{0x1.ca4b31f026aap-1, 0x1.c5e53aa362eb4p-4},
	{0x1.b2036576afce6p-1, 0x1.526e57720db08p-3},
	{0x1.9c2d163a1aa2dp-1, 0x1.bc2860d22477p-3},
	{0x1.886e6037841edp-1, 0x1.1058bc8a07ee1p-2},
	{0x1.767dcf5534862p-1, 0x1.4043057b6ee09p-2},
}

const logfLn2 = 0x1.62e42fefa39efp-1

// logfPoly is __logf_data.poly: log1p(r) ≈ r + A0·r⁴ + A1·r³ + A2·r².
var logfPoly = [3]float64{-0x1.00ea348b88334p-2, 0x1.5575b0be00b6ap-2, -0x1.ffffef20a4123p-2}
