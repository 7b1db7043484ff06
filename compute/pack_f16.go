package compute

import "math"

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
