//go:build !amd64

package compute

// gemmAsm does no columns: GemmNN runs gemmGo.
func gemmAsm(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, k, n int) int {
	return 0
}

func gemmFast() bool { return false }

// gemmPackedAsm does nothing: GemmPacked runs gemmPackedGo.
func gemmPackedAsm(c []float32, ldc int, a, b []float32, m, k, n int) bool { return false }

// packColsF16Asm packs nothing: PackCols converts in Go.
func packColsF16Asm(d []float32, t *Tensor, j int) int { return 0 }

// packRowsAsm packs nothing: PackRows copies in Go.
func packRowsAsm(d, a []float32, lda, k int, round bool) int { return 0 }
