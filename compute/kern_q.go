package compute

import "unsafe"

// panelKernel is the assembly for one weight type on one ISA: a panel layout
// and the kernels that read it against Q8_0 activation blocks, one (x1) or
// four (x4) activation rows at a time. See pack.go and kern_q_amd64.s.
type panelKernel struct {
	kind   packKind
	pack   func(*Tensor) *packed
	x1, x4 func(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)
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

// panelRowsRange computes output columns [lo, hi) of out (m rows of n) with
// the panel kernel pk, for the activations xq (m rows of nb blocks); lo is
// a multiple of panelRows and hi−lo too. Each output's arithmetic is the
// same whatever m, lo and hi are.
func panelRowsRange(pk *panelKernel, p *packed, out []float32, xq []blockQ8_0, m, n, lo, hi int) {
	nb := p.nb
	xs := nb * int(unsafe.Sizeof(blockQ8_0{}))
	os := n * 4
	for p0 := lo / panelRows; p0 < hi/panelRows; p0 += panelChunk {
		np := min(panelChunk, hi/panelRows-p0)
		w := &p.data[p0*nb*p.blockSz]
		t := 0
		for ; t+4 <= m; t += 4 {
			pk.x4(w, &xq[t*nb], xs, &out[t*n+p0*panelRows], os, np, nb)
		}
		for ; t < m; t++ {
			pk.x1(w, &xq[t*nb], xs, &out[t*n+p0*panelRows], os, np, nb)
		}
	}
}
