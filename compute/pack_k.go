package compute

import "encoding/binary"

// packQ4_K repacks Q4_K rows for the assembly (kern_k_amd64.s): per
// super-block 156 bytes, d and dmin (f16) as stored, the eight 6-bit scales
// unpacked to int16 and the eight mins to bytes, then qs[128] as stored.
func packQ4_K(t *Tensor) *packed {
	const bs, out = 144, 156
	nb := t.Cols() / QK_K
	p := &packed{nb: nb, blockSz: out, rowBytes: nb * out}
	p.data = make([]byte, t.Rows()*nb*out)
	for b := range t.Rows() * nb {
		src, dst := t.Data[b*bs:(b+1)*bs], p.data[b*out:(b+1)*out]
		copy(dst[0:4], src[0:4])
		for j := range 8 {
			sc, m := scaleMinK4(j, (*[12]byte)(src[4:16]))
			binary.LittleEndian.PutUint16(dst[4+2*j:], uint16(sc))
			dst[20+j] = m
		}
		copy(dst[28:], src[16:144])
	}
	return p
}
