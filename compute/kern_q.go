package compute

import "unsafe"

// panelKernel is the assembly for one weight type on one ISA, run against
// Q8_0 activation blocks one (x1), four (x4) or eight (x8, where there is
// one) activation rows at a time.
// With pack set, the weights are read in a panel layout (see pack.go) and
// np counts panels; without, the kernels read the rows as stored and np
// counts rows. See kern_q_amd64.s.
type panelKernel struct {
	kind   packKind
	pack   func(*Tensor) *packed
	x1, x4 func(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)
	x8     func(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int) // or nil
	// corr is c in the integer sum's start c·Σq_x: the panels store
	// unsigned quants u = q + off, so Σ q·x = Σ u·x − off·Σx, and c = −off.
	corr int32
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
// as pk can, for the activations xq (m rows of w.Cols()/32 blocks), and
// returns the first column it left for the reference kernels: panel
// kernels take whole panels from lo (a multiple of panelRows), row kernels
// everything. Each output's arithmetic is the same whatever m, lo and hi
// are.
func (pk *panelKernel) rows(p *packed, w *Tensor, out []float32, xq []blockQ8_0, m, lo, hi int) int {
	n, nb := w.Rows(), w.Cols()/32
	xs := nb * int(unsafe.Sizeof(blockQ8_0{}))
	os := n * 4
	step, chunk := panelRows, panelChunk*panelRows
	base, bytesPer := w.Data, w.RowBytes()
	if p != nil {
		hi = min(hi, p.panels*panelRows)
		base, bytesPer = p.data, nb*p.blockSz/panelRows
	} else {
		step = 1
	}
	for r0 := lo; r0 < hi; r0 += chunk {
		nr := min(chunk, hi-r0)
		wp := &base[r0*bytesPer]
		t := 0
		for ; pk.x8 != nil && t+8 <= m; t += 8 {
			pk.x8(wp, &xq[t*nb], xs, &out[t*n+r0], os, nr/step, nb)
		}
		for ; t+4 <= m; t += 4 {
			pk.x4(wp, &xq[t*nb], xs, &out[t*n+r0], os, nr/step, nb)
		}
		for ; t < m; t++ {
			pk.x1(wp, &xq[t*nb], xs, &out[t*n+r0], os, nr/step, nb)
		}
	}
	return max(lo, hi)
}
