package compute

// TransposePanel writes w vectors of rows values each (the c-th at
// x[c·ldx:], say keys of an attention head) into dst as a rows×w matrix:
// dst[p·w+c] = x[c·ldx+p], a panel of w columns that GemmNN reads row after
// row (attention's Kᵀ). Values are copied, so the result does not depend
// on the path: AVX2 8×8 transposes where w is 16 (its rows eight at a
// time), Go for the rest.
func TransposePanel(dst, x []float32, ldx, rows, w int) {
	if rows <= 0 || w <= 0 {
		return
	}
	_ = dst[rows*w-1]
	_ = x[(w-1)*ldx+rows-1]
	p0 := transposeAsm(dst, x, ldx, rows, w)
	for c := range w {
		src := x[c*ldx+p0 : c*ldx+rows]
		for i, v := range src {
			dst[(p0+i)*w+c] = v
		}
	}
}
