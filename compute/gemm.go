package compute

import (
	"fmt"
	"unsafe"
)

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

// GemmFast reports whether GemmNN and GemmPacked run in assembly on this
// CPU (amd64 with AVX2). Elsewhere they are Go, whose exact float32 fused
// multiply-adds are done in software, many times slower: callers with
// another way (the MatMuler's kernels, NEON on arm64) should take it there.
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

// The packed product (model/vision's linear layers): A in micro-panels of
// gemmMR rows (PackRows), B in panels of gemmNR columns (PackCols), the
// sums over p done in blocks of at most gemmKC steps so that a block of
// B's panel (gemmKC·gemmNR values) stays in L1 while the block of A's
// rows runs through it from L2.
const gemmMR, gemmNR, gemmKC = 4, 24, 256

// PackedRows is m rounded up to a whole number of PackRows' micro-panels,
// PackedCols n to a whole number of PackCols' panels.
func PackedRows(m int) int { return (m + gemmMR - 1) / gemmMR * gemmMR }
func PackedCols(n int) int { return (n + gemmNR - 1) / gemmNR * gemmNR }

// PackRows writes the m×k matrix a (rows lda apart) into dst as
// GemmPacked's A: micro-panels of 4 rows, value p of the 4 rows one after
// another, dst[g·4k + p·4 + r] = a[(4g+r)·lda + p], and the last
// micro-panel's rows past m zeros. With round, each value is rounded to
// f16 (RoundF16) on the way. dst holds PackedRows(m)·k values.
func PackRows(dst, a []float32, lda, m, k int, round bool) {
	if m <= 0 || k <= 0 {
		return
	}
	_ = a[(m-1)*lda+k-1]
	for g := 0; g < m; g += gemmMR {
		d := dst[g*k : (g+gemmMR)*k]
		p0 := 0 // values of p the assembly packed
		if g+gemmMR <= m {
			p0 = packRowsAsm(d, a[g*lda:], lda, k, round)
		}
		for r := range gemmMR {
			if g+r >= m {
				for p := range k {
					d[p*gemmMR+r] = 0
				}
				continue
			}
			for p, v := range a[(g+r)*lda+p0 : (g+r)*lda+k] {
				if round {
					v = RoundF16(v)
				}
				d[(p0+p)*gemmMR+r] = v
			}
		}
	}
}

// PackCols writes rows [j, j+w) of the F32 or F16 weight matrix t as
// GemmPacked's B = tᵀ (k = t.Cols() rows, w columns): panels of 24
// columns, value p of a panel's columns one after another, dst[q·24k +
// p·24 + c] = t[j+24q+c][p], F16 converted to float32 (exactly), and the
// last panel's columns past w zeros. dst holds PackedCols(w)·k values.
func PackCols(dst []float32, t *Tensor, j, w int) error {
	k := t.Cols()
	if w < 1 || j < 0 || j+w > t.Rows() || len(dst) < PackedCols(w)*k {
		return fmt.Errorf("pack %s: rows [%d, %d) of %d into %d values", t.Name, j, j+w, t.Rows(), len(dst))
	}
	if t.Type != F32 && t.Type != F16 {
		return fmt.Errorf("pack %s: type %s: want F32 or F16", t.Name, t.Type)
	}
	for q := 0; q < w; q += gemmNR {
		d := dst[q*k : (q+gemmNR)*k]
		p0 := 0 // values of p the assembly packed
		if t.Type == F16 && q+gemmNR <= w {
			p0 = packColsF16Asm(d, t, j+q)
		}
		for c := range gemmNR {
			if q+c >= w {
				for p := range k {
					d[p*gemmNR+c] = 0
				}
				continue
			}
			row := t.Row(j + q + c)
			if t.Type == F32 {
				for p, v := range f32View(row)[:k] {
					d[p*gemmNR+c] = v
				}
				continue
			}
			for p, h := range unsafe.Slice((*uint16)(unsafe.Pointer(&row[0])), k)[p0:] {
				d[(p0+p)*gemmNR+c] = halfToFloat(h)
			}
		}
	}
	return nil
}

// GemmPacked sets C = A·B for A (m×k) packed by PackRows and B (k×n)
// packed by PackCols, C m×n with rows ldc apart. Each output is GemmNN's:
// one fused multiply-add after another over p = 0..k−1 from +0, whatever
// the rows or columns a call takes; the assembly (AVX2) runs them in
// blocks of p, each going on from the sums the last one stored, which is
// the same arithmetic.
func GemmPacked(c []float32, ldc int, a, b []float32, m, k, n int) {
	if m <= 0 || n <= 0 {
		return
	}
	_ = c[(m-1)*ldc+n-1]
	if k <= 0 {
		for i := range m {
			clear(c[i*ldc : i*ldc+n])
		}
		return
	}
	_ = a[PackedRows(m)*k-1]
	_ = b[PackedCols(n)*k-1]
	if !gemmPackedAsm(c, ldc, a, b, m, k, n) {
		gemmPackedGo(c, ldc, a, b, m, k, n)
	}
}

// gemmPackedGo is GemmPacked in Go.
func gemmPackedGo(c []float32, ldc int, a, b []float32, m, k, n int) {
	for i := range m {
		ai := a[i/gemmMR*gemmMR*k+i%gemmMR:]
		for j := range n {
			bj := b[j/gemmNR*gemmNR*k+j%gemmNR:]
			var s float32
			for p := range k {
				s = fmaExact32(ai[p*gemmMR], bj[p*gemmNR], s)
			}
			c[i*ldc+j] = s
		}
	}
}
