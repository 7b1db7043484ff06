package compute

//go:noescape
func expfAVX2(x *float32, n int)

// expInPlace sets x[i] = Expf(x[i]) (see expfAVX2) for the whole groups of
// four in x and returns how many it did.
func expInPlace(x []float32) int {
	n := len(x) &^ 3
	if hostISA < AVX2 || n == 0 {
		return 0
	}
	expfAVX2(&x[0], n)
	return n
}
