package compute

import (
	"encoding/binary"
	"math"
)

// K-quant dequantization: super-blocks of QK_K = 256 values split into
// sub-blocks that each carry a small integer scale (and, for Q2_K, Q4_K and
// Q5_K, a min) applied to the super-block's f16 d and dmin. Mirrors ggml's
// dequantize_row_q{2..6}_K; see dequant.go for why products are wrapped in
// float32() before an add.

// Q2_K block (84 bytes): scales[16] (low nibble scale, high nibble min),
// qs[64] (2-bit values), d f16, dmin f16.
func dequantQ2K(src []byte, dst []float32) {
	for i := range len(dst) / QK_K {
		b := (*[84]byte)(src[i*84:])
		y := (*[QK_K]float32)(dst[i*QK_K:])
		scales := b[0:16]
		d, dmin := f16At(b[80:]), f16At(b[82:])
		is, k := 0, 0
		for n := 0; n < QK_K; n += 128 {
			q := (*[32]byte)(b[16+n/4:])
			for shift := 0; shift < 8; shift += 2 {
				for half := 0; half < 32; half += 16 {
					sc := scales[is]
					is++
					dl, ml := d*float32(sc&0x0f), float32(dmin*float32(sc>>4))
					for l := range 16 {
						y[k] = float32(dl*float32(q[half+l]>>shift&3)) - ml
						k++
					}
				}
			}
		}
	}
}

// Q3_K block (110 bytes): hmask[32] (third bit of each value), qs[64] (low
// two bits), scales[12] (sixteen 6-bit scales, biased by 32), d f16.
func dequantQ3K(src []byte, dst []float32) {
	for i := range len(dst) / QK_K {
		b := (*[110]byte)(src[i*110:])
		y := (*[QK_K]float32)(dst[i*QK_K:])
		hm := (*[32]byte)(b[0:])
		dAll := f16At(b[108:])

		scales := q3KScales(b[96:108])

		is, k := 0, 0
		m := byte(1)
		for n := 0; n < QK_K; n += 128 {
			q := (*[32]byte)(b[32+n/4:])
			for shift := 0; shift < 8; shift += 2 {
				for half := 0; half < 32; half += 16 {
					dl := dAll * float32(int(scales[is])-32)
					is++
					for l := range 16 {
						v := int(q[half+l] >> shift & 3)
						if hm[half+l]&m == 0 {
							v -= 4
						}
						y[k] = dl * float32(v)
						k++
					}
				}
				m <<= 1
			}
		}
	}
}

// scaleMinK4 unpacks sub-block j's 6-bit scale and min from the 12 packed
// bytes of a Q4_K or Q5_K block (ggml's get_scale_min_k4).
func scaleMinK4(j int, q *[12]byte) (sc, m byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0x0f | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// putScaleMinK4 packs sub-block j's 6-bit scale sc and min m into q (zero
// before the first), as scaleMinK4 unpacks them.
func putScaleMinK4(j int, q []byte, sc, m byte) {
	if j < 4 {
		q[j], q[j+4] = sc, m
		return
	}
	q[j+4] = sc&0xf | (m&0xf)<<4
	q[j-4] |= (sc >> 4) << 6
	q[j] |= (m >> 4) << 6
}

// scaleMinK4f returns sub-block j's d·sc and dmin·m (scaleMinK4).
func scaleMinK4f(j int, scales *[12]byte, d, dmin float32) (float32, float32) {
	sc, m := scaleMinK4(j, scales)
	return d * float32(sc), float32(dmin * float32(m))
}

// Q4_K block (144 bytes): d f16, dmin f16, scales[12], qs[128]. Each 64
// values share 32 bytes: low nibbles first, then high nibbles; value =
// d·sc·q − dmin·m.
func dequantQ4K(src []byte, dst []float32) {
	for i := range len(dst) / QK_K {
		b := (*[144]byte)(src[i*144:])
		y := (*[QK_K]float32)(dst[i*QK_K:])
		d, dmin := f16At(b[0:]), f16At(b[2:])
		scales := (*[12]byte)(b[4:])
		k := 0
		for j := 0; j < QK_K/64; j++ {
			q := (*[32]byte)(b[16+32*j:])
			d1, m1 := scaleMinK4f(2*j, scales, d, dmin)
			d2, m2 := scaleMinK4f(2*j+1, scales, d, dmin)
			for l := range 32 {
				y[k+l] = float32(d1*float32(q[l]&0x0f)) - m1
				y[k+32+l] = float32(d2*float32(q[l]>>4)) - m2
			}
			k += 64
		}
	}
}

// Q5_K block (176 bytes): d f16, dmin f16, scales[12], qh[32], qs[128]. Like
// Q4_K with a fifth bit per value taken from qh, two bits of qh per 64 values.
func dequantQ5K(src []byte, dst []float32) {
	for i := range len(dst) / QK_K {
		b := (*[176]byte)(src[i*176:])
		y := (*[QK_K]float32)(dst[i*QK_K:])
		d, dmin := f16At(b[0:]), f16At(b[2:])
		scales := (*[12]byte)(b[4:])
		qh := (*[32]byte)(b[16:])
		k := 0
		u1, u2 := byte(1), byte(2)
		for j := 0; j < QK_K/64; j++ {
			ql := (*[32]byte)(b[48+32*j:])
			d1, m1 := scaleMinK4f(2*j, scales, d, dmin)
			d2, m2 := scaleMinK4f(2*j+1, scales, d, dmin)
			for l := range 32 {
				lo, hi := int(ql[l]&0x0f), int(ql[l]>>4)
				if qh[l]&u1 != 0 {
					lo += 16
				}
				if qh[l]&u2 != 0 {
					hi += 16
				}
				y[k+l] = float32(d1*float32(lo)) - m1
				y[k+32+l] = float32(d2*float32(hi)) - m2
			}
			k += 64
			u1 <<= 2
			u2 <<= 2
		}
	}
}

// Q6_K block (210 bytes): ql[128] (low four bits), qh[64] (high two bits),
// scales int8[16], d f16; value = d·sc·(q − 32).
func dequantQ6K(src []byte, dst []float32) {
	for i := range len(dst) / QK_K {
		b := (*[210]byte)(src[i*210:])
		y := (*[QK_K]float32)(dst[i*QK_K:])
		d := f16At(b[208:])
		for n := 0; n < 2; n++ {
			ql := (*[64]byte)(b[64*n:])
			qh := (*[32]byte)(b[128+32*n:])
			sc := (*[8]byte)(b[192+8*n:])
			yn := (*[128]float32)(y[128*n:])
			for l := range 32 {
				is := l / 16
				q1 := int8(ql[l]&0x0f|(qh[l]>>0&3)<<4) - 32
				q2 := int8(ql[l+32]&0x0f|(qh[l]>>2&3)<<4) - 32
				q3 := int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				yn[l] = d * float32(int8(sc[is])) * float32(q1)
				yn[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
				yn[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
				yn[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
			}
		}
	}
}

// Q8_K block (292 bytes): d f32, qs int8[256], bsums int16[16] (sums of 16
// values, unused here); value = d·q.
func dequantQ8K(src []byte, dst []float32) {
	for i := range len(dst) / QK_K {
		b := (*[292]byte)(src[i*292:])
		y := (*[QK_K]float32)(dst[i*QK_K:])
		d := math.Float32frombits(binary.LittleEndian.Uint32(b[0:]))
		for j := range QK_K {
			y[j] = d * float32(int8(b[4+j]))
		}
	}
}

// q3KScales unpacks a Q3_K block's 12 scale bytes into its 16 6-bit scales,
// still offset by 32, as ggml does with four little-endian words.
func q3KScales(b []byte) [16]int8 {
	const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
	a0 := binary.LittleEndian.Uint32(b[0:])
	a1 := binary.LittleEndian.Uint32(b[4:])
	tmp := binary.LittleEndian.Uint32(b[8:])
	aux := [4]uint32{
		a0&kmask2 | (tmp>>0&kmask1)<<4,
		a1&kmask2 | (tmp>>2&kmask1)<<4,
		a0>>4&kmask2 | (tmp>>4&kmask1)<<4,
		a1>>4&kmask2 | (tmp>>6&kmask1)<<4,
	}
	var scales [16]int8
	for j := range scales {
		scales[j] = int8(aux[j/4] >> (8 * (j % 4)))
	}
	return scales
}
