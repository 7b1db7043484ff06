package compute

import "math"

// MXFP4 weights (OCP microscaling FP4, gpt-oss's expert weights): 32 values
// a block, each a 4-bit E2M1 code, with one shared power-of-two scale.
//
//   - block (17 bytes): e u8 (E8M0), qs[16]; value j is
//     d·kvaluesMXFP4[qs[j] & 15], value j+16 is d·kvaluesMXFP4[qs[j] >> 4],
//     d = 2^(e−128) (ggml's GGML_E8M0_TO_FP32_HALF: the table holds twice
//     the E2M1 values, so the scale is halved). IQ4_NL's nibble layout with
//     another table and scale. Its vec_dot_type is Q8_0.
//
// ggml repacks MXFP4 into 8-row blocks on AVX2 and AVX512 CPUs (mxfp4_8x8,
// run by the same gemv/gemm as q4_0_8x8 and iq4_nl_8x8), so the dot product
// takes the sequential form of vecDotQ4_0 (see vecdot.go).

// kvaluesMXFP4 is ggml's kvalues_mxfp4: the E2M1 values doubled.
var kvaluesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// e8m0Half is ggml's ggml_e8m0_to_fp32_half: 2^(e−128), a subnormal for
// e < 2.
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// dequantMXFP4 is ggml's dequantize_row_mxfp4.
func dequantMXFP4(src []byte, dst []float32) {
	dequantTable(src, dst, 17, func(w *[32]int8, b []byte) float32 {
		unpackTable(w, (*[16]byte)(b[1:]), &kvaluesMXFP4)
		return e8m0Half(b[0])
	})
}

// vecDotMXFP4 is the repacked mxfp4_8x8 gemv/gemm (ggml's
// gemv_q4_b32_8x8_q8_0_lut_avx, shared with Q4_0 and IQ4_NL): sequential,
// acc = FMA(sumi, d_w·d_x, acc) per block.
func vecDotMXFP4(x []byte, y []blockQ8_0) float32 {
	return sequentialDot(x, y, 17, func(w *[32]int8, b []byte) float32 {
		unpackTable(w, (*[16]byte)(b[1:]), &kvaluesMXFP4)
		return e8m0Half(b[0])
	})
}

// bestIndexMXFP4 is ggml's best_index_mxfp4: the first index i with the
// least |kvalues[i]·d − x|, each product rounded to float32.
func bestIndexMXFP4(x, d float32) uint8 {
	best, bestErr := 0, abs32(float32(float32(kvaluesMXFP4[0])*d)-x)
	for i := 1; i < 16; i++ {
		if err := abs32(float32(float32(kvaluesMXFP4[i])*d) - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}

// log2f is log2 of a float32 rounded to float32, as glibc's log2f gives
// it (correctly rounded) except where rounding float64's log2 to float32
// rounds twice; that the two floors agree on every float32 is not tested.
func log2f(x float32) float32 { return float32(math.Log2(float64(x))) }

// quantizeMXFP4 is ggml's quantize_row_mxfp4_ref for one block: e =
// floor(log2(amax)) − 2 + 127 (so that amax/d falls in [4, 8), the top of
// the table 12 = 2·6), then each value's nearest table entry.
func quantizeMXFP4(x *[32]float32, y *[17]byte) {
	var amax float32
	for _, v := range x {
		if a := abs32(v); amax < a {
			amax = a
		}
	}
	var e uint8
	if amax > 0 {
		// C converts the float to uint8_t through a 32-bit integer (cvttss2si).
		e = uint8(int32(float32(math.Floor(float64(log2f(amax)))) - 2 + 127))
	}
	d := e8m0Half(e)
	y[0] = e
	for j := range 16 {
		y[1+j] = bestIndexMXFP4(x[j], d) | bestIndexMXFP4(x[16+j], d)<<4
	}
}
