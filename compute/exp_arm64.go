package compute

// expInPlace sets x[i] = Expf(x[i]) (see expfNEON, exp_arm64.s) for the
// whole groups of four in x and returns how many it did.
func expInPlace(x []float32) int {
	return asmHead(NEON, 4, len(x), func(n int) { expfNEON(&x[0], n) })
}
