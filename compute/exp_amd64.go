package compute

//go:noescape
func expfAVX2(x *float32, n int)

// expInPlace sets x[i] = Expf(x[i]) (see expfAVX2) for the whole groups of
// four in x and returns how many it did.
func expInPlace(x []float32) int {
	return asmHead(AVX2, 4, len(x), func(n int) { expfAVX2(&x[0], n) })
}
