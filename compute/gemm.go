package compute

// GemmNN sets C = A·B for row-major float32 matrices: A m×k (rows lda
// apart), B k×n (rows ldb apart), C m×n (rows ldc apart), each output
// c[i][j] one fused multiply-add after another over p = 0..k−1 from +0,
// whatever the CPU, the block of rows or columns a call takes: the
// assembly (gemm_amd64.s) does gemmGo's arithmetic on register tiles of
// 6 rows by 16 (or 8) columns, the last n mod 8 columns in Go. It is
// attention's K·Qᵀ and weights·V, whose operands are activations
// (model/vision): B is best packed in panels of 16 columns (ldb 16), read
// row after row.
func GemmNN(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, k, n int) {
	if m <= 0 || n <= 0 {
		return
	}
	_ = a[(m-1)*lda+k-1]
	_ = b[(k-1)*ldb+n-1]
	_ = c[(m-1)*ldc+n-1]
	j := gemmAsm(c, ldc, a, lda, b, ldb, m, k, n)
	if j < n {
		gemmGo(c[j:], ldc, a, lda, b[j:], ldb, m, k, n-j)
	}
}

// GemmFast reports whether GemmNN runs in assembly on this CPU (amd64 with
// AVX2). Elsewhere it is gemmGo, whose exact float32 fused multiply-adds
// are done in software, many times slower: callers with another way (the
// MatMuler's kernels, NEON on arm64) should take it there.
func GemmFast() bool { return gemmFast() }

// gemmGo is GemmNN in Go, the reference the assembly is tested against.
func gemmGo(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, k, n int) {
	for i := range m {
		ci := c[i*ldc : i*ldc+n]
		for j := range ci {
			ci[j] = 0
		}
		for p := range k {
			ap := a[i*lda+p]
			bp := b[p*ldb : p*ldb+n]
			for j := range ci {
				ci[j] = fmaExact32(ap, bp[j], ci[j])
			}
		}
	}
}
