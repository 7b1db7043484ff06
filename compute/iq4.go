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

// unpackTable writes the 32 values of table that one block's quants qs[16]
// index into w: low nibbles are values 0..15, high nibbles 16..31.
func unpackTable(w *[32]int8, qs *[16]byte, table *[16]int8) {
	for j, q := range qs {
		w[j] = table[q&0x0f]
		w[j+16] = table[q>>4]
	}
}

// dequantTable dequantizes 32-value blocks of size bytes: quants(w, b) writes
// block b's values into w and returns its scale.
func dequantTable(src []byte, dst []float32, size int, quants func(w *[32]int8, b []byte) float32) {
	var w [32]int8
	for i := range len(dst) / 32 {
		y := (*[32]float32)(dst[i*32:])
		d := quants(&w, src[i*size:(i+1)*size])
		for j, q := range w {
			y[j] = d * float32(q)
		}
	}
}

// dequantIQ4NL is ggml's dequantize_row_iq4_nl.
func dequantIQ4NL(src []byte, dst []float32) {
	dequantTable(src, dst, 18, func(w *[32]int8, b []byte) float32 {
		unpackTable(w, (*[16]byte)(b[2:]), &kvaluesIQ4NL)
		return f16At(b[0:])
	})
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
			unpackTable(&w, (*[16]byte)(b[8+16*ib:]), &kvaluesIQ4NL)
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
	return sequentialDot(x, y, 18, func(w *[32]int8, b []byte) float32 {
		unpackTable(w, (*[16]byte)(b[2:]), &kvaluesIQ4NL)
		return f16At(b[0:])
	})
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
			unpackTable(&w, (*[16]byte)(b[8+16*ib:]), &kvaluesIQ4NL)
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
