package compute

import "encoding/binary"

// packQ4_K repacks Q4_K rows for the assembly (kern_k_amd64.s): per
// super-block 156 bytes, d and dmin (f16) as stored, the eight 6-bit scales
// unpacked to int16 and the eight mins to bytes, then qs[128] as stored.
func packQ4_K(t *Tensor) *packed { return packKRows(t, 144) }

// packQ5_K is packQ4_K for Q5_K: 188 bytes a super-block, qh[32] and
// qs[128] after the unpacked scales and mins.
func packQ5_K(t *Tensor) *packed { return packKRows(t, 176) }

// packKRows repacks rows of Q4_K or Q5_K super-blocks of bs bytes: d and
// dmin, then the scales and mins unpacked (24 bytes where the block has 12),
// then the rest of the block as stored.
func packKRows(t *Tensor, bs int) *packed {
	return repackSuperBlocks(t, bs, bs+12, func(dst, src []byte) {
		copy(dst[0:4], src[0:4])
		unpackScalesMins(dst[4:28], (*[12]byte)(src[4:16]))
		copy(dst[28:], src[16:])
	})
}

// repackSuperBlocks repacks t's rows super-block by super-block: each one's
// bs bytes (src) become out bytes (dst) by repack.
func repackSuperBlocks(t *Tensor, bs, out int, repack func(dst, src []byte)) *packed {
	nb := t.Cols() / QK_K
	p := &packed{nb: nb, blockSz: out, rowBytes: nb * out}
	p.data = make([]byte, t.Rows()*nb*out)
	for b := range t.Rows() * nb {
		repack(p.data[b*out:(b+1)*out], t.Data[b*bs:(b+1)*bs])
	}
	return p
}

// packQ4_KPanels interleaves whole panels of eight Q4_K rows for the VNNI
// panel kernels. A panel super-block is 1184 bytes: the eight rows' d, then
// their dmin (f16, 16 bytes each), the 6-bit scales as bytes, sub-block
// major (scales[j][r], 64 bytes), the mins likewise, then for each pair p
// of sub-blocks and group g of four positions 32 bytes: qs[32p+4g :
// 32p+4g+4] of each row in turn (low nibbles: sub-block 2p, high: 2p+1).
func packQ4_KPanels(t *Tensor) *packed {
	return interleave(t, 144, 1184, func(dst []byte, blocks [panelRows][]byte) {
		for r, b := range blocks {
			binary.LittleEndian.PutUint16(dst[2*r:], binary.LittleEndian.Uint16(b[0:]))
			binary.LittleEndian.PutUint16(dst[16+2*r:], binary.LittleEndian.Uint16(b[2:]))
			for j := range 8 {
				sc, m := scaleMinK4(j, (*[12]byte)(b[4:16]))
				dst[32+8*j+r], dst[96+8*j+r] = sc, m
			}
			for p := range 4 {
				for g := range 8 {
					o := 160 + 256*p + 32*g + 4*r
					binary.LittleEndian.PutUint32(dst[o:], binary.LittleEndian.Uint32(b[16+32*p+4*g:]))
				}
			}
		}
	})
}

// unpackScalesMins writes the eight 6-bit scales of a Q4_K/Q5_K block as
// int16 (dst[0:16]) and its eight mins as bytes (dst[16:24]).
func unpackScalesMins(dst []byte, packed *[12]byte) {
	for j := range 8 {
		sc, m := scaleMinK4(j, packed)
		binary.LittleEndian.PutUint16(dst[2*j:], uint16(sc))
		dst[16+j] = m
	}
}

// packQ3_K repacks Q3_K rows for the assembly (kern_k_amd64.s): per
// super-block 114 bytes, hmask[32] and qs[64] as stored, the sixteen 6-bit
// scales unpacked to int8 (less 32), the even sub-blocks' first (0, 2, ...,
// 14, 1, 3, ..., 15, so that one VPSHUFB gives a 32-value chunk its two
// scales), then d (f16).
func packQ3_K(t *Tensor) *packed {
	return repackSuperBlocks(t, 110, 114, func(dst, src []byte) {
		copy(dst[0:96], src[0:96])
		sc := q3KScales(src[96:108])
		for j, s := range sc {
			dst[96+j/2+8*(j%2)] = byte(s - 32)
		}
		copy(dst[112:114], src[108:110])
	})
}
