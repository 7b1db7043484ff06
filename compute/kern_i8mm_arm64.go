package compute

import "unsafe"

// interleaveQ8_K, the activation layout of the SMMLA (i8mm) kernels of
// kern_i8mm_arm64.s; their declarations are in kernels_arm64.go.

// q8KX4Bytes is one super-block of four activation rows in interleaveQ8_K's
// layout: the size of four blockQ8_K.
const q8KX4Bytes = 4 * int(unsafe.Sizeof(blockQ8_K{}))

// interleaveQ8_K writes each whole group of four activation rows r0..r3 of
// src (m rows of nb blocks) into the same 4·nb blocks of dst as nb
// super-blocks of q8KX4Bytes (1168) bytes, the layout q4_KX4I8MM and
// q2_KX4I8MM read with no rearranging of their own:
//
//	[0, 512)      rows r0, r1: for g in 0..31, r0.qs[8g:8g+8] then r1.qs[8g:8g+8]
//	              (SMMLA's two rows of eight bytes, one LDP per two groups)
//	[512, 1024)   rows r2, r3 the same
//	[1024, 1040)  d of r0..r3 (float32)
//	[1040, 1168)  bsums of r0..r3 (16 int16 each)
//
// The values are copied, not changed, so the kernels' sums are those of
// the rows as quantized. The m%4 rows left over are not written.
func interleaveQ8_K(dst, src []blockQ8_K, m, nb int) {
	if len(dst) < m/4*4*nb || len(src) < m*nb {
		panic("compute: interleaveQ8_K: short buffer")
	}
	for t := 0; t+4 <= m; t += 4 {
		g := unsafe.Slice((*byte)(unsafe.Pointer(&dst[t*nb])), nb*q8KX4Bytes)
		for k := range nb {
			o := g[k*q8KX4Bytes : (k+1)*q8KX4Bytes]
			for r := range 4 {
				b := &src[(t+r)*nb+k]
				qs := unsafe.Slice((*byte)(unsafe.Pointer(&b.qs[0])), QK_K)
				pair := o[512*(r/2)+8*(r%2):]
				for gi := range QK_K / 8 {
					copy(pair[16*gi:16*gi+8], qs[8*gi:8*gi+8])
				}
				*(*float32)(unsafe.Pointer(&o[1024+4*r])) = b.d
				copy(unsafe.Slice((*int16)(unsafe.Pointer(&o[1040+32*r])), 16), b.bsums[:])
			}
		}
	}
}
