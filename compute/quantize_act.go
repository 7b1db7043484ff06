package compute

import "math"

// Activation quantizers. Before an integer block dot product ggml's CPU
// backend converts each activation row (src1) to the weight type's
// vec_dot_type: Q8_0 for Q4_0, Q5_0 and Q8_0 weights, Q8_1 for Q4_1 and
// Q5_1, Q8_K for the K-quants.
//
// Q8_0 and Q8_1 follow ggml's x86 quantize_row_q8_0/q8_1 (AVX2, also used by
// the repacked Q4_0 kernels), which produced the llama.cpp reference logits:
// the inverse scale is 127/amax and values round half to even. The portable
// quantize_row_q8_0_ref differs in the last bit of some quants (1/(amax/127),
// halves away from zero), which is enough to move the logits of small
// quantized models by several percent of their spread. Q8_K is
// quantize_row_q8_K_ref, which x86 uses as is.
//
// The blocks are Go structs rather than ggml's byte layout: they never leave
// the MatMuler. An f16 field of ggml's block is held as the float32 value of
// that half, which is what the dot products read.

// blockQ8_0 is one quantized block of 32 activations: value j ≈ d·qs[j].
type blockQ8_0 struct {
	d    float32 // f16-rounded scale
	corr int32   // where the panel kernels start the block's integer sum: c·Σqs (see panelKernel)
	qs   [32]int8
}

// blockQ8_1 is blockQ8_0 plus s = d·Σqs (f16-rounded), which lets the Q4_1
// and Q5_1 dot products add the weight block's min once per block.
type blockQ8_1 struct {
	d, s float32 // f16-rounded
	qs   [32]int8
}

// blockQ8_K is one quantized super-block of QK_K activations: value j ≈
// d·qs[j], with bsums[i] the sum of qs[16i : 16i+16] for the K-quants' mins.
type blockQ8_K struct {
	d     float32 // full float32, not rounded to f16
	qs    [QK_K]int8
	bsums [QK_K / 16]int16
}

// RoundF16 rounds f to the nearest float16 value (ties to even), as float32.
func RoundF16(f float32) float32 { return FP16ToFP32(FP32ToFP16(f)) }

// RoundF16s sets dst[i] = RoundF16(src[i]) for i < len(src), eight at a
// time in assembly where the CPU has F16C. dst may be src.
func RoundF16s(dst, src []float32) {
	dst = dst[:len(src)]
	for i := roundF16sAsm(dst, src); i < len(src); i++ {
		dst[i] = RoundF16(src[i])
	}
}

// roundEvenSat rounds f to the nearest integer, halves to even, and
// saturates to int8, as _mm256_round_ps, _mm256_cvtps_epi32 and the packs
// instructions do. Converting a float32 to float64 is exact, so rounding
// there is too.
func roundEvenSat(f float32) int8 {
	return int8(max(-128, min(127, math.RoundToEven(float64(f)))))
}

// nearestInt is ggml's nearest_int: round to nearest, ties to even, by adding
// 1.5·2^23 in float32 and reading the low mantissa bits. Valid for
// |f| ≤ 4194303.
func nearestInt(f float32) int32 {
	val := f + 12582912
	return int32(math.Float32bits(val)&0x007fffff) - 0x00400000
}

// absMax32 is the largest |v| of a block (0 for an all-zero block).
func absMax32(xb *[32]float32) float32 {
	var amax float32
	for _, v := range xb {
		amax = max(amax, abs32(v))
	}
	return amax
}

// quantizeRowQ8_0 quantizes x (len(y)·32 values) into y: d = amax/127
// stored as f16, q = round-half-even(x·127/amax) with the unrounded scale.
// It runs the assembly version where there is one (the same bits).
func quantizeRowQ8_0(x []float32, y []blockQ8_0) { quantizeRowQ8_0Corr(x, y, 0) }

// quantizeRowQ8_0Corr is quantizeRowQ8_0 that also sets each block's corr
// to c·Σqs (see panelKernel.corr).
func quantizeRowQ8_0Corr(x []float32, y []blockQ8_0, c int32) {
	if hostISA > Generic && len(y) > 0 {
		_ = x[len(y)*32-1]
		quantizeQ8_0Asm(x, y, c)
		return
	}
	quantizeRowQ8_0Generic(x, y)
	setCorr(y, c)
}

// quantizeRowQ8_0Generic is quantizeRowQ8_0 in Go: the reference.
func quantizeRowQ8_0Generic(x []float32, y []blockQ8_0) {
	for i := range y {
		y[i].d = RoundF16(quantizeBlock32((*[32]float32)(x[i*32:]), &y[i].qs))
	}
}

// quantizeBlock32 writes the 32 values of xb times 127/amax (amax their
// largest magnitude) rounded to nearest even into qs and returns the
// unrounded scale amax/127.
func quantizeBlock32(xb *[32]float32, qs *[32]int8) float32 {
	amax := absMax32(xb)
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	for j, v := range xb {
		qs[j] = roundEvenSat(v * id)
	}
	return amax / 127
}

// quantizeRowQ8_1 is quantizeRowQ8_0 plus s = f16(d·Σq) with the unrounded
// d = amax/127. It runs the assembly version where there is one (the same
// bits).
func quantizeRowQ8_1(x []float32, y []blockQ8_1) {
	if hostISA > Generic && len(y) > 0 {
		_ = x[len(y)*32-1]
		quantizeQ8_1Asm(x, y)
		return
	}
	quantizeRowQ8_1Generic(x, y)
}

// quantizeRowQ8_1Generic is quantizeRowQ8_1 in Go: the reference.
func quantizeRowQ8_1Generic(x []float32, y []blockQ8_1) {
	for i := range y {
		d := quantizeBlock32((*[32]float32)(x[i*32:]), &y[i].qs)
		y[i].d = RoundF16(d)
		var sum int32
		for _, q := range y[i].qs {
			sum += int32(q)
		}
		y[i].s = RoundF16(d * float32(sum))
	}
}

// quantizeRowQ8_K quantizes x (len(y)·QK_K values) into y, as
// quantize_row_q8_K_ref: the first value of largest magnitude, max, maps to
// ∓127 (iscale = −127/max), the rest round to nearest even, clamped at 127,
// and d = 1/iscale. An all-zero block gets d = 0 and zero quants and sums.
//
// It runs the assembly version where there is one (the same bits).
func quantizeRowQ8_K(x []float32, y []blockQ8_K) {
	if hostISA > Generic && len(y) > 0 {
		_ = x[len(y)*QK_K-1]
		quantizeQ8_KAsm(x, y)
		for i := range y {
			setBsums(&y[i])
		}
		return
	}
	quantizeRowQ8_KGeneric(x, y)
}

// setBsums sets b.bsums from b.qs.
func setBsums(b *blockQ8_K) {
	for j := range b.bsums {
		var sum int16
		for _, q := range b.qs[16*j : 16*j+16] {
			sum += int16(q)
		}
		b.bsums[j] = sum
	}
}

// quantizeRowQ8_KGeneric is quantizeRowQ8_K in Go: the reference.
func quantizeRowQ8_KGeneric(x []float32, y []blockQ8_K) {
	for i := range y {
		xb := (*[QK_K]float32)(x[i*QK_K:])
		b := &y[i]
		var amax, vmax float32
		for _, v := range xb {
			if a := abs32(v); a > amax {
				amax, vmax = a, v
			}
		}
		if amax == 0 {
			*b = blockQ8_K{}
			continue
		}
		iscale := -127 / vmax
		for j, v := range xb {
			b.qs[j] = int8(min(127, nearestInt(float32(iscale*v))))
		}
		setBsums(b)
		b.d = 1 / iscale
	}
}

// roundRowF16 rounds x to f16 values into dst (ggml converts activations to
// F16 before an F16 weight's dot product).
func roundRowF16(x, dst []float32) {
	for i, v := range x {
		dst[i] = FP16ToFP32(FP32ToFP16(v))
	}
}

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }
