package compute

//go:noescape
func transpose16AVX2(dst *float32, x *float32, ldx int, rows int)

// transposeAsm is TransposePanel's whole eights of rows for a panel of 16
// columns with AVX2; it returns the rows done (0 without AVX2 or where w
// is not 16).
func transposeAsm(dst, x []float32, ldx, rows, w int) int {
	r8 := rows &^ 7
	if hostISA < AVX2 || w != 16 || r8 == 0 {
		return 0
	}
	transpose16AVX2(&dst[0], &x[0], 4*ldx, r8)
	return r8
}
