package compute

// K-quant block dot products with Q8_K activations, with the float order of
// ggml's x86 kernels (see vecdot.go): Q2_K and Q4_K are repacked on AVX512
// and AVX2 CPUs and take the sequential form with a separate accumulator for
// the mins, one FMA per super-block in the gemv but one per 128 (Q2_K) or 64
// (Q4_K) values in the gemm that ggml uses for groups of four activation
// rows, hence the *Batch kernels (used only with MatMuler.GGMLBatch: they
// make a row's result depend on its batch); Q3_K, Q5_K and Q6_K run
// ggml_vec_dot_q{3,5,6}_K_q8_K (AVX2) and take the lane form. Each kernel
// first unpacks a super-block's quants into int8 and its sub-block scales
// into int32.

// kLanes returns the eight lane sums of a super-block: lane l is
// Σ sc[p/sub]·w[p]·x[p] over the positions p with (p mod 32)/4 == l.
func kLanes(w, x *[QK_K]int8, sc []int32, sub int) [8]int32 {
	var lane [8]int32
	for p := 0; p < QK_K; p += 4 {
		s := sc[p/sub]
		l := p % 32 / 4
		lane[l] += s * (int32(w[p])*int32(x[p]) + int32(w[p+1])*int32(x[p+1]) +
			int32(w[p+2])*int32(x[p+2]) + int32(w[p+3])*int32(x[p+3]))
	}
	return lane
}

// kSum returns Σ sc[p/sub]·w[p]·x[p] over sub-blocks [from, to).
func kSum(w, x *[QK_K]int8, sc []int32, sub, from, to int) int32 {
	var sum int32
	for j := from; j < to; j++ {
		s := sc[j]
		var part int32
		for p := j * sub; p < (j+1)*sub; p++ {
			part += int32(w[p]) * int32(x[p])
		}
		sum += s * part
	}
	return sum
}

// unpackQs2 writes the low two bits of Q2_K/Q3_K quants (qs[64]: four 2-bit
// planes per 128 values) into w.
func unpackQs2(w *[QK_K]int8, qs []byte) {
	for n := 0; n < QK_K; n += 128 {
		q := qs[n/4 : n/4+32]
		for shift := 0; shift < 4; shift++ {
			for l, b := range q {
				w[n+32*shift+l] = int8(b >> (2 * shift) & 3)
			}
		}
	}
}

// Q2_K block (84 bytes): scales[16] (low nibble scale, high nibble min of
// each 16 values), qs[64], d f16, dmin f16. The repacked q2_K_8x8 kernels
// are sequential; the gemv takes one FMA per super-block (vecDotQ2_K), the
// AVX512 gemm that handles groups of four activation rows one per 128 values
// (vecDotQ2_KBatch).
func vecDotQ2_K(x []byte, y []blockQ8_K) float32      { return seqQ2_K(x, y, 16) }
func vecDotQ2_KBatch(x []byte, y []blockQ8_K) float32 { return seqQ2_K(x, y, 8) }

// seqChunks adds one super-block of the sequential K kernels to acc and
// accMin in groups of chunk sub-blocks of size values: per group
// fma(float(isum), d, acc) with isum its kSum, and fma(float(imin), dmin,
// accMin) with imin the sum of minTerm(j) over its sub-blocks j.
func seqChunks(acc, accMin *float32, w *[QK_K]int8, yb *blockQ8_K, sc []int32, size, chunk int, d, dmin float32, minTerm func(j int) int32) {
	for c := 0; c < len(sc); c += chunk {
		var imin int32
		for j := c; j < c+chunk; j++ {
			imin += minTerm(j)
		}
		isum := kSum(w, &yb.qs, sc, size, c, c+chunk)
		*acc = fma32(float32(isum), d, *acc)
		*accMin = fma32(float32(imin), dmin, *accMin)
	}
}

// seqQ2_K accumulates per group of chunk 16-value sub-blocks.
func seqQ2_K(x []byte, y []blockQ8_K, chunk int) float32 {
	var acc, accMin float32
	var w [QK_K]int8
	var sc [16]int32
	for i := range y {
		b := (*[84]byte)(x[i*84:])
		yb := &y[i]
		for j := range sc {
			sc[j] = int32(b[j] & 0x0f)
		}
		unpackQs2(&w, b[16:80])
		d, dmin := f16At(b[80:])*yb.d, f16At(b[82:])*yb.d
		seqChunks(&acc, &accMin, &w, yb, sc[:], 16, chunk, d, dmin, func(j int) int32 {
			return int32(yb.bsums[j]) * int32(b[j]>>4)
		})
	}
	return acc - accMin
}

// vecDotQ3_K is ggml_vec_dot_q3_K_q8_K (x86): lanes. Q3_K block (110
// bytes): hmask[32] (a clear bit subtracts 4), qs[64], scales[12] (sixteen
// 6-bit scales biased by 32), d f16.
func vecDotQ3_K(x []byte, y []blockQ8_K) float32 {
	var acc [8]float32
	var w [QK_K]int8
	var sc [16]int32
	for i := range y {
		b := (*[110]byte)(x[i*110:])
		yb := &y[i]
		unpackQs2(&w, b[32:96])
		hm := b[0:32]
		for p := range w {
			if hm[p%32]&(1<<(p/32)) == 0 {
				w[p] -= 4
			}
		}
		raw := q3KScales(b[96:108])
		for j := range sc {
			sc[j] = int32(byte(raw[j])) - 32
		}
		lane := kLanes(&w, &yb.qs, sc[:], 16)
		accLanes(&acc, yb.d*f16At(b[108:]), &lane)
	}
	return hsum8(&acc)
}

// unpackScalesK4 unpacks the eight 6-bit scales and mins of a Q4_K/Q5_K
// block.
func unpackScalesK4(sc, mins *[8]int32, packed *[12]byte) {
	for j := range sc {
		s, m := scaleMinK4(j, packed)
		sc[j], mins[j] = int32(s), int32(m)
	}
}

// Q4_K block (144 bytes): d f16, dmin f16, scales[12], qs[128] (each 64
// values share 32 bytes: low nibbles first). The repacked q4_K_8x8 kernels
// are sequential; the gemv takes one FMA per super-block (vecDotQ4_K), the
// gemm that handles groups of four activation rows one per 64 values
// (vecDotQ4_KBatch).
func vecDotQ4_K(x []byte, y []blockQ8_K) float32      { return seqQ4_K(x, y, 8) }
func vecDotQ4_KBatch(x []byte, y []blockQ8_K) float32 { return seqQ4_K(x, y, 2) }

// seqQ4_K accumulates per group of chunk 32-value sub-blocks.
func seqQ4_K(x []byte, y []blockQ8_K, chunk int) float32 {
	var acc, accMin float32
	var w [QK_K]int8
	var sc, mins [8]int32
	for i := range y {
		b := (*[144]byte)(x[i*144:])
		yb := &y[i]
		for j := range 4 {
			for l, q := range b[16+32*j : 48+32*j] {
				w[64*j+l] = int8(q & 0x0f)
				w[64*j+32+l] = int8(q >> 4)
			}
		}
		unpackScalesK4(&sc, &mins, (*[12]byte)(b[4:]))
		d, dmin := f16At(b[0:])*yb.d, f16At(b[2:])*yb.d
		seqChunks(&acc, &accMin, &w, yb, sc[:], 32, chunk, d, dmin, func(j int) int32 {
			return mins[j] * (int32(yb.bsums[2*j]) + int32(yb.bsums[2*j+1]))
		})
	}
	return acc - accMin
}

// vecDotQ5_K is ggml_vec_dot_q5_K_q8_K (x86): lanes, plus the mins' term
// −d_y·dmin·Σ added by FMA into a separate scalar. Q5_K block (176 bytes):
// d f16, dmin f16, scales[12], qh[32] (fifth bits), qs[128].
func vecDotQ5_K(x []byte, y []blockQ8_K) float32 {
	var acc [8]float32
	var summs float32
	var w [QK_K]int8
	var sc, mins [8]int32
	for i := range y {
		b := (*[176]byte)(x[i*176:])
		yb := &y[i]
		hm := b[16:48]
		for j := range 4 {
			for l, q := range b[48+32*j : 80+32*j] {
				lo, hi := int8(q&0x0f), int8(q>>4)
				if hm[l]&(1<<(2*j)) != 0 {
					lo += 16
				}
				if hm[l]&(2<<(2*j)) != 0 {
					hi += 16
				}
				w[64*j+l], w[64*j+32+l] = lo, hi
			}
		}
		unpackScalesK4(&sc, &mins, (*[12]byte)(b[4:]))
		var imin int32
		for j, m := range mins {
			imin += m * (int32(yb.bsums[2*j]) + int32(yb.bsums[2*j+1]))
		}
		summs = fma32(-yb.d*f16At(b[2:]), float32(imin), summs)
		lane := kLanes(&w, &yb.qs, sc[:], 32)
		accLanes(&acc, yb.d*f16At(b[0:]), &lane)
	}
	return hsum8(&acc) + summs
}

// vecDotQ6_K is ggml_vec_dot_q6_K_q8_K (x86): lanes over the unsigned quants,
// with the −32 offset taken off each lane as 32·(bsums·scales) of two
// sub-blocks. Q6_K block (210 bytes): ql[128] (low four bits), qh[64] (high
// two bits), scales int8[16], d f16.
func vecDotQ6_K(x []byte, y []blockQ8_K) float32 {
	var acc [8]float32
	var w [QK_K]int8
	var sc [16]int32
	for i := range y {
		b := (*[210]byte)(x[i*210:])
		yb := &y[i]
		for n := range 2 {
			ql, qh := b[64*n:64*n+64], b[128+32*n:160+32*n]
			wn := w[128*n : 128*n+128]
			for l := range 32 {
				wn[l] = int8(ql[l]&0x0f | (qh[l]>>0&3)<<4)
				wn[l+32] = int8(ql[l+32]&0x0f | (qh[l]>>2&3)<<4)
				wn[l+64] = int8(ql[l]>>4 | (qh[l]>>4&3)<<4)
				wn[l+96] = int8(ql[l+32]>>4 | (qh[l]>>6&3)<<4)
			}
		}
		for j := range sc {
			sc[j] = int32(int8(b[192+j]))
		}
		lane := kLanes(&w, &yb.qs, sc[:], 16)
		for l := range lane {
			lane[l] -= 32 * (int32(yb.bsums[2*l])*sc[2*l] + int32(yb.bsums[2*l+1])*sc[2*l+1])
		}
		accLanes(&acc, yb.d*f16At(b[208:]), &lane)
	}
	return hsum8(&acc)
}
