package compute

import "math"

// Sinf and Cosf are glibc's sinf and cosf on x86-64 with FMA (the
// __sinf_fma/__cosf_fma variants glibc picks on such CPUs), which ggml's
// rope calls: they are not always the correctly rounded values (about 1.5%
// of rope angles differ from float32(math.Cos(x)) in the last bit), and a
// last-bit difference in a roped key can survive the f16 cache. The
// algorithm is ARM's optimized-routines math/sinf.c, cosf.c and sincosf.h
// (Copyright (c) 2018, Arm Limited, MIT), with GCC's contraction of
// a + b·c into a fused multiply-add, as glibc's FMA build has it.

// sincosfTable is __sincosf_table: sign[4], hpi_inv (2/π·2^24), hpi (π/2),
// the cosine polynomial c0..c4 and the sine polynomial s1..s3. The second
// entry computes −cos.
var sincosfTable = [2]struct {
	sign               [4]float64
	hpiInv, hpi        float64
	c0, c1, c2, c3, c4 float64
	s1, s2, s3         float64
}{
	{[4]float64{1, -1, -1, 1}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0,
		0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{[4]float64{1, -1, -1, 1}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0,
		-0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

// invPio4 is 4/π to 192 bits, 8 new bits per entry.
var invPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e,
	0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1,
	0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599,
	0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

// abstop12 is the top 12 bits of |x| (exponent and 3 mantissa bits).
func abstop12(x float32) uint32 { return math.Float32bits(x) >> 20 & 0x7ff }

const (
	top12Pio4 = 0x3f4 // abstop12(float32(π/4))
	top12Tiny = 0x398 // abstop12(0x1p-12)
	top12Fast = 0x42f // abstop12(120)
	top12Inf  = 0x7f8
)

// sinfPoly is sinf_poly: the sine polynomial of x (x2 = x²) when n is even,
// the cosine polynomial when odd.
func sinfPoly(x, x2 float64, p int, n int) float32 {
	t := &sincosfTable[p]
	if n&1 == 0 {
		x3 := x * x2
		s1 := math.FMA(x2, t.s3, t.s2)
		x7 := x3 * x2
		s := math.FMA(x3, t.s1, x)
		return float32(math.FMA(x7, s1, s))
	}
	x4 := x2 * x2
	c2 := math.FMA(x2, t.c4, t.c3)
	c1 := math.FMA(x2, t.c1, t.c0)
	x6 := x4 * x2
	c := math.FMA(x4, t.c2, c1)
	return float32(math.FMA(x6, c2, c))
}

// reduceFast reduces x (|x| < 120) to [−π/4, π/4] and its quadrant.
func reduceFast(x float64) (float64, int) {
	t := &sincosfTable[0]
	r := x * t.hpiInv
	n := (int32(r) + 0x800000) >> 24
	return math.FMA(-float64(n), t.hpi, x), int(n)
}

// reduceLarge reduces the float with bits xi (|x| ≥ 2, the sign ignored)
// to [−π/4, π/4] and its quadrant, with 4/π to 192 bits.
func reduceLarge(xi uint32) (float64, int) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi & 0xffffff) | 0x800000
	xi <<= shift
	res0 := uint64(xi * arr[0])
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = (res2 >> 32) | (res0 << 32)
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	const pi64 = 0x1.921FB54442D18p-62
	return float64(int64(res0)) * pi64, int(n)
}

// Sinf is glibc's sinf (x86-64, FMA).
func Sinf(y float32) float32 {
	x := float64(y)
	switch top := abstop12(y); {
	case top < top12Pio4:
		if top < top12Tiny {
			return y
		}
		return sinfPoly(x, x*x, 0, 0)
	case top < top12Fast:
		x, n := reduceFast(x)
		return sinfPoly(x*sincosfTable[0].sign[n&3], x*x, n>>1&1, n)
	case top < top12Inf:
		xi := math.Float32bits(y)
		sign := int(xi >> 31)
		x, n := reduceLarge(xi)
		return sinfPoly(x*sincosfTable[0].sign[(n+sign)&3], x*x, (n+sign)>>1&1, n)
	}
	return float32(math.NaN())
}

// Cosf is glibc's cosf (x86-64, FMA).
func Cosf(y float32) float32 {
	x := float64(y)
	switch top := abstop12(y); {
	case top < top12Pio4:
		if top < top12Tiny {
			return 1
		}
		return sinfPoly(x, x*x, 0, 1)
	case top < top12Fast:
		x, n := reduceFast(x)
		return sinfPoly(x*sincosfTable[0].sign[n&3], x*x, n>>1&1, n^1)
	case top < top12Inf:
		xi := math.Float32bits(y)
		sign := int(xi >> 31)
		x, n := reduceLarge(xi)
		return sinfPoly(x*sincosfTable[0].sign[(n+sign)&3], x*x, (n+sign)>>1&1, n^1)
	}
	return float32(math.NaN())
}
