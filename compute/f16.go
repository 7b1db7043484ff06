package compute

import "math"

// Half-precision (IEEE 754 binary16) and bfloat16 conversions, bit-exact with
// ggml (ggml-impl.h). fp16 → fp32 and bf16 → fp32 are exact; fp32 → fp16 and
// fp32 → bf16 round to nearest, ties to even.

// fp16Table maps every half bit pattern to its float32 value. It is written
// once at package initialization and only read afterwards.
var fp16Table = buildFP16Table()

func buildFP16Table() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = math.Float32frombits(fp16ToFP32Bits(uint16(h)))
	}
	return &t
}

// FP16ToFP32 returns the float32 value of the IEEE half h. Every half is
// exactly representable: subnormals become normal floats, infinities stay
// infinite and a NaN keeps its sign and payload with the quiet bit set (as
// x86 F16C's vcvtph2ps does).
func FP16ToFP32(h uint16) float32 { return fp16Table[h] }

// fp16ToFP32Bits converts a half to float32 bits without arithmetic.
func fp16ToFP32Bits(h uint16) uint32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f && mant == 0: // ±inf
		return sign | 0x7f800000
	case exp == 0x1f: // NaN: keep payload, force quiet
		return sign | 0x7fc00000 | mant<<13
	case exp != 0: // normal: rebias 15 → 127
		return sign | (exp+112)<<23 | mant<<13
	case mant == 0: // ±0
		return sign
	}
	// Subnormal: value = mant · 2^-24. Shift the leading one into the
	// implicit position; each shift lowers the exponent by one.
	e := uint32(113) // biased exponent of 2^-14
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return sign | e<<23 | (mant&0x3ff)<<13
}

// FP32ToFP16 converts f to the nearest IEEE half, ties to even. Values too
// large for a half become ±inf, values too small ±0 (through the half
// subnormals), and every NaN becomes the quiet NaN 0x7e00 with f's sign.
// This is ggml's portable ggml_compute_fp32_to_fp16, the same algorithm
// used where F16C is absent; for non-NaN inputs it equals F16C's
// vcvtps2ph with round-to-nearest-even.
func FP32ToFP16(f float32) uint16 {
	const (
		scaleToInf  = 0x1.0p+112
		scaleToZero = 0x1.0p-110
	)
	w := math.Float32bits(f)
	abs := math.Float32frombits(w &^ 0x80000000)
	// Two float32 roundings, as in C: multiply to overflow values beyond the
	// half range, then scale back down. The outer conversion keeps the
	// compiler from fusing the second product into the add below.
	base := float32(float32(abs*scaleToInf) * scaleToZero)

	shl1W := w + w
	sign := w & 0x80000000
	bias := shl1W & 0xff000000
	if bias < 0x71000000 {
		bias = 0x71000000
	}
	// Adding a power of two aligned to the half's precision rounds the
	// mantissa to 10 bits (ties to even) in the float32 adder.
	base = math.Float32frombits(bias>>1+0x07800000) + base
	bits := math.Float32bits(base)
	expBits := (bits >> 13) & 0x7c00
	mantBits := bits & 0x0fff
	nonsign := expBits + mantBits
	if shl1W > 0xff000000 { // NaN
		nonsign = 0x7e00
	}
	return uint16(sign>>16) | uint16(nonsign)
}

// BF16ToFP32 returns the float32 value of the bfloat16 h: its bits are the
// top half of a float32.
func BF16ToFP32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// FP32ToBF16 converts f to bfloat16 as ggml's ggml_compute_fp32_to_bf16 does:
// round to nearest, ties to even; a NaN keeps its sign and top payload bits
// and is forced quiet.
func FP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN
		return uint16(u>>16) | 64
	}
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}
