package compute

//go:noescape
func expF64AVX2(x *float32, n int)

// expInPlace sets x[i] = float32(e^x[i]) (see expF64AVX2) for the whole
// groups of four in x and returns how many it did.
func expInPlace(x []float32) int {
	n := len(x) &^ 3
	if hostISA < AVX2 || n == 0 {
		return 0
	}
	expF64AVX2(&x[0], n)
	return n
}
