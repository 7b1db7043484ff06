//go:build !amd64

package compute

// gemmAsm does no columns: GemmNN runs gemmGo.
func gemmAsm(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, k, n int) int {
	return 0
}

func gemmFast() bool { return false }

// gemmPackedAsm does nothing: GemmPacked runs gemmPackedGo.
func gemmPackedAsm(c []float32, ldc int, a, b []float32, mp, k, np int) bool { return false }
