package compute

import (
	"encoding/binary"
	"math"
)

// Block dot products of one quantized weight row with one quantized
// activation row. The integer work is ggml's: exact sums of q_w·q_x inside a
// block. The float work, which decides the last bits of the result, follows
// the kernels ggml's CPU backend runs on x86 with AVX2/AVX512 (the build that
// produced the llama.cpp reference logits): ggml/src/ggml-cpu/arch/x86/
// quants.c, repack.cpp (Q4_0, Q4_K and Q2_K weights are repacked into 8-row
// interleaved blocks on such CPUs) and llamafile's tinyBLAS_Q0_AVX (batched
// Q8_0 and Q5_0, same arithmetic as the vec_dot). Two shapes occur:
//
//   - lanes: eight float32 accumulators; lane l takes, per block, the integer
//     sum of the products at positions p with (p mod 32)/4 == l, times the
//     block scale, by FMA; the lanes are added by hsum8 at the end.
//   - sequential: one float32 accumulator, acc = FMA(sumi, d_w·d_x, acc) per
//     block (the repacked gemv/gemm kernels, one output per vector lane).
//
// The portable ggml_vec_dot_*_generic sum in another order and agree to a few
// ulps. Each kernel takes the weight row's bytes (a whole number of blocks)
// and the activation blocks covering the same values. The legacy 32-value
// types are here; the K-quants in vecdot_k.go.

// fma32 is a float32 fused multiply-add. The float64 product of two float32
// values is exact; rounding the float64 FMA to float32 rounds twice, which
// differs from a single rounding only when the float64 result falls exactly
// halfway between two float32 values (about one case in 2^29).
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// hsum8 adds eight lanes as ggml's hsum_float_8 does: upper half onto lower
// half, then pairs.
func hsum8(acc *[8]float32) float32 {
	r0, r1 := acc[4]+acc[0], acc[5]+acc[1]
	r2, r3 := acc[6]+acc[2], acc[7]+acc[3]
	return (r0 + r2) + (r1 + r3)
}

// accLanes adds d·lane[l] into acc[l] by FMA.
func accLanes(acc *[8]float32, d float32, lane *[8]int32) {
	for l, s := range lane {
		acc[l] = fma32(d, float32(s), acc[l])
	}
}

// lanes32 returns the eight lane sums of a 32-value block: lane l is
// Σ w[j]·x[j] over j in [4l, 4l+4).
func lanes32(w *[32]int8, x *[32]int8) [8]int32 {
	var lane [8]int32
	for l := range lane {
		lane[l] = int32(w[4*l])*int32(x[4*l]) + int32(w[4*l+1])*int32(x[4*l+1]) +
			int32(w[4*l+2])*int32(x[4*l+2]) + int32(w[4*l+3])*int32(x[4*l+3])
	}
	return lane
}

// unpack4 writes a 32-value block's 4-bit quants (low nibbles are values
// 0..15, high nibbles 16..31) minus off into w.
func unpack4(w *[32]int8, qs *[16]byte, off int8) {
	for j, q := range qs {
		w[j] = int8(q&0x0f) - off
		w[j+16] = int8(q>>4) - off
	}
}

// unpack5 writes a 32-value block's 5-bit quants (4 low bits in qs, fifth bit
// j in qh) minus off into w.
func unpack5(w *[32]int8, qs *[16]byte, qh uint32, off int8) {
	for j, q := range qs {
		w[j] = int8(q&0x0f|byte(qh>>j<<4)&0x10) - off
		w[j+16] = int8(q>>4|byte(qh>>(j+12))&0x10) - off
	}
}

// vecDotQ4_0 is the repacked q4_0_8x8 gemv/gemm: sequential. Q4_0 block (18
// bytes): d f16, qs[16]; value = q − 8.
func vecDotQ4_0(x []byte, y []blockQ8_0) float32 {
	return sequentialDot(x, y, 18, func(w *[32]int8, b []byte) float32 {
		unpack4(w, (*[16]byte)(b[2:]), 8)
		return f16At(b[0:])
	})
}

// sequentialDot is the sequential shape over blocks of size bytes:
// quants(w, b) writes block b's weight quants into w and returns its scale
// d_w; per block acc = fma(float(sumi), d_w·d_x, acc).
func sequentialDot(x []byte, y []blockQ8_0, size int, quants func(w *[32]int8, b []byte) float32) float32 {
	var acc float32
	var w [32]int8
	for ib := range y {
		d := quants(&w, x[ib*size:(ib+1)*size])
		var sumi int32
		for j, q := range w {
			sumi += int32(q) * int32(y[ib].qs[j])
		}
		acc = fma32(float32(sumi), d*y[ib].d, acc)
	}
	return acc
}

// lanesDot is the lanes shape over nb blocks of size bytes (d f16 first):
// quants(w, b, ib) writes block ib's (b) weight quants into w and returns
// its activation block's d and qs.
func lanesDot(x []byte, nb, size int, quants func(w *[32]int8, b []byte, ib int) (float32, *[32]int8)) float32 {
	var acc [8]float32
	var w [32]int8
	for ib := range nb {
		b := x[ib*size : (ib+1)*size]
		d, qs := quants(&w, b, ib)
		lane := lanes32(&w, qs)
		accLanes(&acc, f16At(b[0:])*d, &lane)
	}
	return hsum8(&acc)
}

// vecDotQ4_1 is ggml_vec_dot_q4_1_q8_1 (x86): lanes, plus Σ m·s added by FMA
// into a separate scalar. Q4_1 block (20 bytes): d f16, m f16, qs[16]; value
// = q·d + m.
func vecDotQ4_1(x []byte, y []blockQ8_1) float32 {
	var summs float32
	sum := lanesDot(x, len(y), 20, func(w *[32]int8, b []byte, ib int) (float32, *[32]int8) {
		summs = fma32(f16At(b[2:]), y[ib].s, summs)
		unpack4(w, (*[16]byte)(b[4:]), 0)
		return y[ib].d, &y[ib].qs
	})
	return sum + summs
}

// vecDotQ5_0 is ggml_vec_dot_q5_0_q8_0 (x86): lanes. Q5_0 block (22 bytes):
// d f16, qh u32 (fifth bits), qs[16]; value = q − 16.
func vecDotQ5_0(x []byte, y []blockQ8_0) float32 {
	return lanesDot(x, len(y), 22, func(w *[32]int8, b []byte, ib int) (float32, *[32]int8) {
		unpack5(w, (*[16]byte)(b[6:]), binary.LittleEndian.Uint32(b[2:]), 16)
		return y[ib].d, &y[ib].qs
	})
}

// vecDotQ5_1 is ggml_vec_dot_q5_1_q8_1 (x86): lanes plus Σ m·s. Q5_1 block
// (24 bytes): d f16, m f16, qh u32, qs[16]; value = q·d + m.
func vecDotQ5_1(x []byte, y []blockQ8_1) float32 {
	var summs float32
	sum := lanesDot(x, len(y), 24, func(w *[32]int8, b []byte, ib int) (float32, *[32]int8) {
		summs = fma32(f16At(b[2:]), y[ib].s, summs)
		unpack5(w, (*[16]byte)(b[8:]), binary.LittleEndian.Uint32(b[4:]), 0)
		return y[ib].d, &y[ib].qs
	})
	return sum + summs
}

// vecDotQ8_0 is ggml_vec_dot_q8_0_q8_0 (x86) and tinyBLAS_Q0_AVX: lanes.
// Q8_0 block (34 bytes): d f16, qs int8[32].
func vecDotQ8_0(x []byte, y []blockQ8_0) float32 {
	return lanesDot(x, len(y), 34, func(w *[32]int8, b []byte, ib int) (float32, *[32]int8) {
		for j := range w {
			w[j] = int8(b[2+j])
		}
		return y[ib].d, &y[ib].qs
	})
}
