package compute

//go:noescape
func addAVX2(dst, x *float32, n int)

// addVec adds x's whole groups of eight to dst's with AVX2 and returns how
// many values it did (0 without AVX2).
func addVec(dst, x []float32) int {
	return asmHead(AVX2, 8, len(x), func(n int) {
		_ = dst[n-1]
		addAVX2(&dst[0], &x[0], n)
	})
}
