package compute

// IQ4_NL and IQ4_XS weights: 4-bit indices into ggml's non-linear table
// kvalues_iq4nl, times a block scale.
//
//   - IQ4_NL block (18 bytes, 32 values): d f16, qs[16]; value j is
//     d·kvalues[qs[j] & 15], value j+16 is d·kvalues[qs[j] >> 4] (Q4_0's
//     layout with the table in place of q − 8). Its vec_dot_type is Q8_0.
//   - IQ4_XS block (136 bytes, QK_K values): d f16, scales_h u16,
//     scales_l[4], qs[128]; eight sub-blocks of 32 values laid out as an
//     IQ4_NL block's quants, each with a 6-bit scale ls (low four bits in
//     scales_l, nibble ib%2 of byte ib/2; high two bits at bits 2ib of
//     scales_h) used as ls − 32. Its vec_dot_type is Q8_K.
//
// The dot products follow ggml's x86 CPU arithmetic (see vecdot.go): IQ4_NL
// is repacked into q4_0-style 8-row blocks on AVX2 and AVX512 CPUs and
// takes the sequential form of vecDotQ4_0; IQ4_XS runs
// ggml_vec_dot_iq4_xs_q8_K and takes the lane form with one FMA per
// super-block.

// kvaluesIQ4NL is ggml's kvalues_iq4nl.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// unpackIQ4 writes the 32 table values of one block's quants qs[16] into w:
// low nibbles are values 0..15, high nibbles 16..31.
func unpackIQ4(w *[32]int8, qs *[16]byte) {
	for j, q := range qs {
		w[j] = kvaluesIQ4NL[q&0x0f]
		w[j+16] = kvaluesIQ4NL[q>>4]
	}
}

// dequantIQ4NL is ggml's dequantize_row_iq4_nl.
func dequantIQ4NL(src []byte, dst []float32) {
	var w [32]int8
	for i := range len(dst) / 32 {
		b := (*[18]byte)(src[i*18:])
		y := (*[32]float32)(dst[i*32:])
		d := f16At(b[0:])
		unpackIQ4(&w, (*[16]byte)(b[2:]))
		for j, q := range w {
			y[j] = d * float32(q)
		}
	}
}

// iq4XSScale returns sub-block ib's scale ls − 32 of an IQ4_XS block.
func iq4XSScale(b *[136]byte, ib int) int32 {
	sh := uint16(b[2]) | uint16(b[3])<<8
	ls := int32(b[4+ib/2]>>(4*(ib%2))&0x0f) | int32(sh>>(2*ib)&3)<<4
	return ls - 32
}

// dequantIQ4XS is ggml's dequantize_row_iq4_xs.
func dequantIQ4XS(src []byte, dst []float32) {
	var w [32]int8
	for i := range len(dst) / QK_K {
		b := (*[136]byte)(src[i*136:])
		d := f16At(b[0:])
		for ib := range QK_K / 32 {
			dl := d * float32(iq4XSScale(b, ib))
			unpackIQ4(&w, (*[16]byte)(b[8+16*ib:]))
			y := (*[32]float32)(dst[i*QK_K+32*ib:])
			for j, q := range w {
				y[j] = dl * float32(q)
			}
		}
	}
}

// vecDotIQ4NL is the repacked iq4_nl_8x8 gemv/gemm (ggml's
// gemv_q4_b32_8x8_q8_0_lut_avx, shared with Q4_0): sequential.
func vecDotIQ4NL(x []byte, y []blockQ8_0) float32 {
	var acc float32
	var w [32]int8
	for ib := range y {
		b := (*[18]byte)(x[ib*18:])
		yb := &y[ib]
		unpackIQ4(&w, (*[16]byte)(b[2:]))
		var sumi int32
		for j, q := range w {
			sumi += int32(q) * int32(yb.qs[j])
		}
		acc = fma32(float32(sumi), f16At(b[0:])*yb.d, acc)
	}
	return acc
}

// vecDotIQ4XS is ggml_vec_dot_iq4_xs_q8_K (AVX2): per super-block eight
// int32 lanes (lane l sums ls_ib·w·x over positions p with (p mod 32)/4 ==
// l, all sub-blocks ib), times d_w·d_x added by FMA into eight float lanes,
// summed by hsum8 at the end.
func vecDotIQ4XS(x []byte, y []blockQ8_K) float32 {
	var acc [8]float32
	var w [32]int8
	for i := range y {
		b := (*[136]byte)(x[i*136:])
		yb := &y[i]
		var lane [8]int32
		for ib := range QK_K / 32 {
			unpackIQ4(&w, (*[16]byte)(b[8+16*ib:]))
			part := lanes32(&w, (*[32]int8)(yb.qs[32*ib:]))
			ls := iq4XSScale(b, ib)
			for l, s := range part {
				lane[l] += ls * s
			}
		}
		accLanes(&acc, f16At(b[0:])*yb.d, &lane)
	}
	return hsum8(&acc)
}
