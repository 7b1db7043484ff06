package compute

import "unsafe"

//go:noescape
func gemm6x16AVX2(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)

//go:noescape
func gemm6x8AVX2(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)

//go:noescape
func gemm1x8AVX2(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)

//go:noescape
func gemm1x16AVX2(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)

// gemmAsm runs GemmNN's whole 16-column strips, then a whole 8-column
// one, with AVX2 and returns how many columns it did (0 without AVX2). A
// strip's rows go six at a time, then one at a time.
func gemmAsm(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, k, n int) int {
	n16, n8 := n&^15, n&^7
	if hostISA < AVX2 || n8 == 0 || k == 0 {
		return 0
	}
	for j := 0; j < n16; j += 16 {
		i := 0
		for ; i+6 <= m; i += 6 {
			gemm6x16AVX2(&c[i*ldc+j], 4*ldc, &a[i*lda], 4*lda, &b[j], 4*ldb, k)
		}
		for ; i < m; i++ {
			gemm1x16AVX2(&c[i*ldc+j], 4*ldc, &a[i*lda], 4*lda, &b[j], 4*ldb, k)
		}
	}
	if n8 > n16 {
		i := 0
		for ; i+6 <= m; i += 6 {
			gemm6x8AVX2(&c[i*ldc+n16], 4*ldc, &a[i*lda], 4*lda, &b[n16], 4*ldb, k)
		}
		for ; i < m; i++ {
			gemm1x8AVX2(&c[i*ldc+n16], 4*ldc, &a[i*lda], 4*lda, &b[n16], 4*ldb, k)
		}
	}
	return n8
}

func gemmFast() bool { return hostISA >= AVX2 }

//go:noescape
func gemmPk4x24AVX2(c *float32, ldc int, a *float32, b *float32, k int, acc int, next uintptr)

// gemmPackedAsm runs GemmPacked with AVX2 (false without). The whole
// tiles go for each block of at most gemmKC steps of p, each panel of B,
// each micro-panel of A, storing into C; a tile cut by m or n (the last
// micro-panel, the last panel) goes block after block in a tile of its
// own, then its part is copied out.
func gemmPackedAsm(c []float32, ldc int, a, b []float32, m, k, n int) bool {
	if hostISA < AVX2 {
		return false
	}
	mp, np := PackedRows(m)/gemmMR, PackedCols(n)/gemmNR
	mf, nf := m/gemmMR, n/gemmNR // whole micro-panels, panels
	blocks := (k + gemmKC - 1) / gemmKC
	kb := (k + blocks - 1) / blocks
	for p0, acc := 0, 0; p0 < k; p0, acc = p0+kb, 1 {
		kn := min(kb, k-p0)
		for q := range nf {
			bq := &b[q*gemmNR*k+p0*gemmNR]
			for g := range mf {
				ag := &a[g*gemmMR*k+p0*gemmMR]
				gemmPk4x24AVX2(&c[g*gemmMR*ldc+q*gemmNR], 4*ldc, ag, bq, kn, acc, uintptr(unsafe.Pointer(ag))+4*gemmMR*uintptr(k))
			}
		}
	}
	var tile [gemmMR * gemmNR]float32
	for q := range np {
		for g := range mp {
			if g < mf && q < nf {
				continue
			}
			for p0, acc := 0, 0; p0 < k; p0, acc = p0+kb, 1 {
				ag := &a[g*gemmMR*k+p0*gemmMR]
				gemmPk4x24AVX2(&tile[0], 4*gemmNR, ag, &b[q*gemmNR*k+p0*gemmNR], min(kb, k-p0), acc, uintptr(unsafe.Pointer(ag)))
			}
			i0, j0 := g*gemmMR, q*gemmNR
			for i := range min(gemmMR, m-i0) {
				copy(c[(i0+i)*ldc+j0:(i0+i)*ldc+min(n, j0+gemmNR)], tile[i*gemmNR:])
			}
		}
	}
	return true
}

//go:noescape
func packColsF16AVX2(dst *float32, src *uint16, ld int, k8 int)

// packColsF16Asm packs F16 rows [j, j+24) of t into the panel d as PackCols
// does, the first 8·⌊k/8⌋ values of p, with AVX2 (F16C), and returns how
// many it did (0 without).
func packColsF16Asm(d []float32, t *Tensor, j int) int {
	k8 := t.Cols() / 8
	if hostISA < AVX2 || k8 == 0 {
		return 0
	}
	_ = d[gemmNR*8*k8-1]
	_ = t.Row(j + gemmNR - 1)
	packColsF16AVX2(&d[0], (*uint16)(unsafe.Pointer(&t.Row(j)[0])), t.RowBytes(), k8)
	return 8 * k8
}

//go:noescape
func packRowsAVX2(dst *float32, src *float32, lda int, k8 int, round int)

// packRowsAsm packs the 4 rows of a (lda apart) into the micro-panel d as
// PackRows does, the first 8·⌊k/8⌋ values of p, with AVX2 (F16C), and
// returns how many it did (0 without).
func packRowsAsm(d, a []float32, lda, k int, round bool) int {
	k8 := k / 8
	if hostISA < AVX2 || k8 == 0 {
		return 0
	}
	_ = d[gemmMR*8*k8-1]
	_ = a[(gemmMR-1)*lda+8*k8-1]
	r := 0
	if round {
		r = 1
	}
	packRowsAVX2(&d[0], &a[0], 4*lda, k8, r)
	return 8 * k8
}
