package compute

// expInPlace sets x[i] = Expf(x[i]) (see expfNEON, exp_arm64.s) for the
// whole groups of four in x and returns how many it did.
func expInPlace(x []float32) int {
	n := len(x) &^ 3
	if hostISA < NEON || n == 0 {
		return 0
	}
	expfNEON(&x[0], n)
	return n
}
