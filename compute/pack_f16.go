package compute

import (
	"fmt"
	"math"
	"unsafe"
)

// PackPanel writes rows [j, j+w) (w ≤ 16) of the F32 or F16 weight matrix t
// transposed into dst as one of GemmNN's 16-column panels of B = tᵀ:
// dst[p·16+c] = t[j+c][p] for p < t.Cols(), c < w, each F16 value converted
// to float32 (exactly). The columns from w to 16 are left as they were:
// GemmNN with n = w and ldb = 16 never reads them. It lets a product by
// float weights run on GemmNN's register tiles (model/vision's linear
// layers).
func PackPanel(dst []float32, t *Tensor, j, w int) error {
	k := t.Cols()
	if w < 1 || w > 16 || j < 0 || j+w > t.Rows() || len(dst) < 16*k {
		return fmt.Errorf("pack %s: rows [%d, %d) of %d into %d values", t.Name, j, j+w, t.Rows(), len(dst))
	}
	if k == 0 {
		return nil
	}
	switch t.Type {
	case F32:
		for c := range w {
			row := f32View(t.Row(j + c))[:k]
			for p, v := range row {
				dst[p*16+c] = v
			}
		}
	case F16:
		var rows [16][]uint16
		for c := range w {
			b := t.Row(j + c)
			rows[c] = unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), k)
		}
		for p := range k {
			d := dst[p*16 : p*16+w]
			for c := range d {
				d[c] = halfToFloat(rows[c][p])
			}
		}
	default:
		return fmt.Errorf("pack %s: type %s: want F32 or F16", t.Name, t.Type)
	}
	return nil
}

// halfToFloat is FP16ToFP32 computed for a normal half (its bits moved into
// place and the exponent rebiased: exact) and looked up for the rest
// (zeros, subnormals, infinities, NaNs), sparing the 256 KiB table's cache
// lines for the values weights mostly hold.
func halfToFloat(h uint16) float32 {
	if e := h & 0x7c00; e != 0 && e != 0x7c00 {
		return math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)<<13 + 112<<23))
	}
	return fp16Table[h]
}
