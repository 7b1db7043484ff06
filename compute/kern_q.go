package compute

import "unsafe"

// panelKernel is the assembly for one weight type on one ISA, run against
// activation blocks B (the weight type's vec_dot_type) one (x1), four (x4, where
// there is one) or eight (x8, where there is one) activation rows at a
// time, and the rest by x5 (the last five rows), x3 (three rows, once) and
// x2 (pairs) where there are: a 7-row batch is x4 then x3, a 6-row one x4
// then x2, a 9-row one x4 then x5 (x8 then x1 where there is an x8), each
// weight block decoded once per call rather than once per row. (Splitting
// 5 rows as x3 and x2 rather than x4 and x1 measured no faster on AVX2.) With pack set, the weights are read in a layout of their own (see
// pack.go): whole panels of panelRows interleaved rows when panel is set
// (np then counts panels), else rows one after the other. Without pack the
// kernels read the rows as stored. See kern_q_amd64.s, kern_ql_amd64.s and
// kern_k_amd64.s.
type panelKernel[B actBlock] struct {
	pack       func(*Tensor) *packed
	panel      bool
	x1, x4, x8 func(w *byte, x *B, xs int, out *float32, os int, np, nb int)
	x2, x3, x5 func(w *byte, x *B, xs int, out *float32, os int, np, nb int)
	// corr is c in the integer sum's start c·Σq_x: the panels store
	// unsigned quants u = q + off, so Σ q·x = Σ u·x − off·Σx, and c = −off.
	corr int32
	// inter, where set, writes the layout x4 reads: each whole group of
	// four activation rows of src (m rows of nb blocks) rearranged in
	// place of the same 4·nb blocks of dst (see kern_i8mm_arm64.go). The
	// MatMuler does it once a call; x1 reads the rows as quantized.
	inter func(dst, src []B, m, nb int)
}

// panelChunk is how many panels a worker runs over all activation rows
// before moving on, so that they stay in cache (16 panels of 2048 Q4_0
// values are 147 KB).
const panelChunk = 16

// setCorr sets every activation block's corr to c·Σqs.
func setCorr(y []blockQ8_0, c int32) {
	for i := range y {
		var s int32
		for _, q := range y[i].qs {
			s += int32(q)
		}
		y[i].corr = c * s
	}
}

// rows computes output columns [lo, hi) of out (m rows of w.Rows()) as far
// as pk can, for the activations xq (m rows of blocks), and returns the
// first column it left for the reference kernels: panel kernels take whole
// panels from lo (a multiple of panelRows), row kernels everything. Each
// output's arithmetic is the same whatever m, lo and hi are.
func (pk *panelKernel[B]) rows(p *packed, w *Tensor, out []float32, xq []B, m, lo, hi int) int {
	var xq4 []B
	if pk.inter != nil && m >= 4 {
		nb := w.Cols() / w.Type.BlockSize()
		xq4 = make([]B, len(xq))
		pk.inter(xq4, xq, m, nb)
	}
	return pk.rows4(p, w, out, xq, xq4, m, lo, hi)
}

// rows4 is rows with the activations also in inter's layout (xq4, when
// pk.inter is set and m >= 4).
func (pk *panelKernel[B]) rows4(p *packed, w *Tensor, out []float32, xq, xq4 []B, m, lo, hi int) int {
	n, nb := w.Rows(), w.Cols()/w.Type.BlockSize()
	xs := nb * int(unsafe.Sizeof(xq[0]))
	os := n * 4
	step, chunk := 1, panelChunk*panelRows
	base, bytesPer := w.Data, w.RowBytes()
	if p != nil {
		base, bytesPer = p.data, p.rowBytes
	}
	if pk.panel { // whole panels from lo (a multiple of panelRows)
		step = panelRows
		hi = lo + max(0, min(hi, p.panels*panelRows)-lo)/panelRows*panelRows
	}
	for r0 := lo; r0 < hi; r0 += chunk {
		nr := min(chunk, hi-r0)
		wp := &base[r0*bytesPer]
		t := 0
		for ; pk.x8 != nil && t+8 <= m; t += 8 {
			pk.x8(wp, &xq[t*nb], xs, &out[t*n+r0], os, nr/step, nb)
		}
		for ; pk.x4 != nil && t+4 <= m && (m-t != 5 || pk.x5 == nil); t += 4 {
			if pk.inter != nil {
				pk.x4(wp, &xq4[t*nb], xs, &out[t*n+r0], os, nr/step, nb)
			} else {
				pk.x4(wp, &xq[t*nb], xs, &out[t*n+r0], os, nr/step, nb)
			}
		}
		if pk.x5 != nil && m-t == 5 {
			pk.x5(wp, &xq[t*nb], xs, &out[t*n+r0], os, nr/step, nb)
			t += 5
		}
		if pk.x3 != nil && m-t >= 3 {
			pk.x3(wp, &xq[t*nb], xs, &out[t*n+r0], os, nr/step, nb)
			t += 3
		}
		for ; pk.x2 != nil && t+2 <= m; t += 2 {
			pk.x2(wp, &xq[t*nb], xs, &out[t*n+r0], os, nr/step, nb)
		}
		for ; t < m; t++ {
			pk.x1(wp, &xq[t*nb], xs, &out[t*n+r0], os, nr/step, nb)
		}
	}
	return max(lo, hi)
}
