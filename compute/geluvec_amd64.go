package compute

//go:noescape
func geluAVX2(x *float32, n int, t *uint16)

// geluAsm runs Gelu over the whole eights of x with AVX2 and F16C and
// returns how many values it did (0 without AVX2).
func geluAsm(x []float32) int {
	return asmHead(AVX2, 8, len(x), func(n int) { geluAVX2(&x[0], n, &geluF16Pad()[0]) })
}

//go:noescape
func lookupAVX2(x *float32, n int, t *uint16)

// lookupAsm runs HalfTable.Lookup over the whole eights of x with AVX2 and
// F16C and returns how many values it did (0 without AVX2).
func lookupAsm(x []float32, t *HalfTable) int {
	return asmHead(AVX2, 8, len(x), func(n int) { lookupAVX2(&x[0], n, &t[0]) })
}
