package lora

import (
	"fmt"
	"slices"

	"github.com/troupe-llm/troupe/compute"
)

// Scaled is an adapter applied to a sequence with a scale (llama-server's
// per-request {id, scale}; 1: as trained).
type Scaled struct {
	Adapter *Adapter
	Scale   float32
}

// Applier adds the low-rank products of each row's adapters to a matrix
// product, S-LoRA/Punica's way: the rows that share an adapter are
// gathered into a group, which takes the product by A (rank, in) in one
// call, reading A once; B's product is then an AXPY over the output
// columns (compute.LowRank, B held transposed), which runs on the workers
// of the base product as they finish their columns (Prepare, then
// compute.MatMuler.MatMulThen), so that a micro-batch mixing adapters
// costs about one small product pair per adapter and no dispatch of its
// own. Its scratch grows to the largest call and is reused.
type Applier struct {
	adapters []*Adapter        // the distinct adapters at one place in the rows' lists
	groups   []group           // the adapters with a pair for the weight, place after place
	rows     []int32           // the groups' batch rows, group after group
	scales   []float32         // (len(rows)) each row's factor of B·A·x
	tAll     []float32         // the groups' A·x, group after group
	mm1      *compute.MatMuler // the A products, on the calling goroutine
	out      []float32         // (n, nOut) Prepare's base product, for after
	nOut     int
	after    func(lo, hi int) // ap.addCols, made once

	// Pairs that MatMul multiplies (B neither F32 nor F16, or
	// MatMuler.GGMLBatch: addPair).
	x []float32 // (m, in) the rows' inputs, gathered
	t []float32 // (m, rank) A·x
	y []float32 // (m, out) B·A·x
}

// group is the rows of one adapter at weight w, at one place of their
// lists.
type group struct {
	pair   *Pair
	lo, hi int       // its rows: rows[lo:hi], scales[lo:hi]
	t      []float32 // ((hi-lo), rank) A·x, rounded by LowRank.RoundT
}

// sharedA is the size (multiply-adds) of a group's A product from which
// it runs on mm's workers rather than the calling goroutine (the same
// bits: MatMul's are batch-invariant).
const sharedA = 1 << 20

// panelBytes bounds the B panels AddCols runs over all of a group's rows
// before moving on: they stay in the L1 cache.
const panelBytes = 16 << 10

// Add adds to out, the product (n, w.Rows()) of x (n, w.Cols()) by w, each
// row's adapters' updates: row i belongs to sequence seq[i], whose
// adapters are loras[seq[i]], applied in their order (so a row's result
// does not depend on the other rows). An adapter without a pair for w
// adds nothing. Each row gets out += (B·(A·x))·scale, as llama.cpp's
// build_lora_mm computes it.
func (ap *Applier) Add(mm *compute.MatMuler, out, x []float32, n int, w *compute.Tensor, seq []int32, loras [][]Scaled) error {
	after, err := ap.Prepare(mm, out, x, n, w, seq, loras)
	if err != nil {
		return err
	}
	if after != nil {
		after(0, w.Rows())
		return nil
	}
	return ap.addPairs(mm, out, x, n, w, seq, loras)
}

// Prepare readies Add's updates for a base product out (n, w.Rows()) of x
// not yet computed, and returns the function that adds them to output
// columns [lo, hi) once the base product's are final (for
// MatMuler.MatMulThen; disjoint ranges may run at once), valid until the
// next call. It computes the groups' A products, a decode step's on the
// calling goroutine (by a MatMuler of its own, while mm's workers wait for
// the base product: sharing them out cost a dispatch per projection, which
// measured no faster on a loaded 2-core machine), large ones on mm. It returns nil where no adapter has
// a pair for w, and where a pair takes MatMul (B neither F32 nor F16, or
// mm.GGMLBatch): then Add does the updates, with mm.
func (ap *Applier) Prepare(mm *compute.MatMuler, out, x []float32, n int, w *compute.Tensor, seq []int32, loras [][]Scaled) (func(lo, hi int), error) {
	if len(loras) == 0 {
		return nil, nil
	}
	ap.groups, ap.rows, ap.scales = ap.groups[:0], ap.rows[:0], ap.scales[:0]
	size := 0
	for j := 0; ; j++ {
		if ap.collect(j, n, seq, loras); len(ap.adapters) == 0 {
			break
		}
		for _, a := range ap.adapters {
			p := a.Weights[w.Name]
			if p == nil {
				continue
			}
			if mm.GGMLBatch || p.lowRank() == nil {
				return nil, nil
			}
			g := group{pair: p, lo: len(ap.rows)}
			for i := range n {
				if l := loras[seq[i]]; j < len(l) && l[j].Adapter == a {
					ap.rows = append(ap.rows, int32(i))
					ap.scales = append(ap.scales, p.Scale(a.Alpha, l[j].Scale))
				}
			}
			g.hi = len(ap.rows)
			size += (g.hi - g.lo) * p.Rank()
			ap.groups = append(ap.groups, g)
		}
	}
	if len(ap.groups) == 0 {
		return nil, nil
	}
	if ap.mm1 == nil {
		ap.mm1 = compute.NewMatMuler(1)
		ap.after = ap.addCols
	}
	in := w.Cols()
	ap.tAll = grow(ap.tAll, size)
	off := 0
	for gi := range ap.groups {
		g := &ap.groups[gi]
		m, rank := g.hi-g.lo, g.pair.Rank()
		g.t = ap.tAll[off : off+m*rank]
		off += m * rank
		ap.x = grow(ap.x, m*in)
		for r, i := range ap.rows[g.lo:g.hi] {
			copy(ap.x[r*in:(r+1)*in], x[int(i)*in:(int(i)+1)*in])
		}
		amm := ap.mm1
		if m*rank*in >= sharedA { // a prefill's: worth mm's workers
			amm = mm
		}
		if err := amm.MatMul(g.t, ap.x, m, g.pair.A); err != nil {
			return nil, fmt.Errorf("lora: %s: %w", g.pair.A.Name, err)
		}
		g.pair.lowRank().RoundT(g.t)
	}
	ap.out, ap.nOut = out, w.Rows()
	return ap.after, nil
}

// addCols adds the prepared groups' updates to output columns [lo, hi),
// place after place (each row's adapters in their order).
func (ap *Applier) addCols(lo, hi int) {
	for gi := range ap.groups {
		g := &ap.groups[gi]
		low := g.pair.lowRank()
		rank := low.Rank()
		step := max(16, panelBytes/(64*rank)*16)
		for c0 := lo; c0 < hi; c0 += step {
			c1 := min(hi, c0+step)
			for r, i := range ap.rows[g.lo:g.hi] {
				low.AddCols(ap.out[int(i)*ap.nOut:(int(i)+1)*ap.nOut], g.t[r*rank:(r+1)*rank], ap.scales[g.lo+r], c0, c1)
			}
		}
	}
}

// collect sets ap.adapters to the distinct adapters the n rows take at
// position j of their sequences' lists.
func (ap *Applier) collect(j, n int, seq []int32, loras [][]Scaled) {
	ap.adapters = ap.adapters[:0]
	for i := range n {
		if l := loras[seq[i]]; j < len(l) && !slices.Contains(ap.adapters, l[j].Adapter) {
			ap.adapters = append(ap.adapters, l[j].Adapter)
		}
	}
}

// addPairs adds the updates by MatMul, adapter by adapter (addPair).
func (ap *Applier) addPairs(mm *compute.MatMuler, out, x []float32, n int, w *compute.Tensor, seq []int32, loras [][]Scaled) error {
	if len(loras) == 0 {
		return nil
	}
	for j := 0; ; j++ {
		if ap.collect(j, n, seq, loras); len(ap.adapters) == 0 {
			return nil
		}
		for _, a := range ap.adapters {
			if p := a.Weights[w.Name]; p != nil {
				if err := ap.addPair(mm, out, x, n, w, p, a, j, seq, loras); err != nil {
					return fmt.Errorf("lora: %s: %w", a.Path, err)
				}
			}
		}
	}
}

// addPair adds pair p of adapter a to the rows whose j-th adapter is a, by
// two MatMul calls.
func (ap *Applier) addPair(mm *compute.MatMuler, out, x []float32, n int, w *compute.Tensor, p *Pair, a *Adapter, j int, seq []int32, loras [][]Scaled) error {
	in, nOut, rank := w.Cols(), w.Rows(), p.Rank()
	var rows []int32
	for i := range n {
		if l := loras[seq[i]]; j < len(l) && l[j].Adapter == a {
			rows = append(rows, int32(i))
		}
	}
	m := len(rows)
	ap.x = grow(ap.x, m*in)
	ap.t = grow(ap.t, m*rank)
	ap.y = grow(ap.y, m*nOut)
	for r, i := range rows {
		copy(ap.x[r*in:(r+1)*in], x[int(i)*in:(int(i)+1)*in])
	}
	if err := mm.MatMul(ap.t, ap.x, m, p.A); err != nil {
		return err
	}
	if err := mm.MatMul(ap.y, ap.t, m, p.B); err != nil {
		return err
	}
	for r, i := range rows {
		s := p.Scale(a.Alpha, loras[seq[i]][j].Scale)
		o, y := out[int(i)*nOut:(int(i)+1)*nOut], ap.y[r*nOut:(r+1)*nOut]
		for c := range o {
			o[c] += float32(y[c] * s) // rounded, as ggml_scale stores it, then added (never fused)
		}
	}
	return nil
}

// grow returns buf with at least n values, reallocated only when short.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}
