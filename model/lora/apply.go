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
// call, reading A once, then adds B's product by an AXPY over the output
// columns (compute.LowRank, B held transposed), so a micro-batch mixing
// adapters costs about one small product pair per adapter. The groups of a
// projection are shared over mm's workers in one dispatch (or, fewer
// groups than workers, each group's columns). Its scratch grows to the
// largest call and is reused.
type Applier struct {
	adapters []*Adapter // the distinct adapters at one place in the rows' lists
	groups   []group    // the adapters with a pair for the weight, their rows
	rows     []int32    // the groups' batch rows, group after group
	scales   []float32  // (len(rows)) each row's factor of B·A·x
	units    []unit     // the shares' work
	workers  []worker   // (mm.Workers())
	share    func(wi int)
	job      job // the call in flight, as the shares see it

	// Pairs that MatMul multiplies (B neither F32 nor F16, or
	// MatMuler.GGMLBatch: addPair).
	x []float32 // (m, in) the rows' inputs, gathered
	t []float32 // (m, rank) A·x
	y []float32 // (m, out) B·A·x
}

// group is the rows of one adapter at weight w.
type group struct {
	pair   *Pair
	lo, hi int       // its rows: rows[lo:hi], scales[lo:hi]
	t      []float32 // ((hi-lo), rank) A·x when computed before the shares, else nil
	cost   int       // multiply-adds
}

// unit is a share's work: output columns [c0, c1) of group g.
type unit struct {
	g, c0, c1 int
	worker    int
}

// worker is one share's scratch.
type worker struct {
	mm   *compute.MatMuler // a MatMuler of one worker: the shares' A products
	x, t []float32
	err  error
}

// job is one Add call's operands.
type job struct {
	out, x  []float32
	in, out_ int
}

// parallelMACs is the work (multiply-adds) below which a projection's
// updates run on the calling goroutine: a dispatch costs more.
const parallelMACs = 1 << 15

// panelBytes bounds the B panels a share runs over all of a group's rows
// before moving on: they stay in the L1 cache.
const panelBytes = 16 << 10

// Add adds to out, the product (n, w.Rows()) of x (n, w.Cols()) by w, each
// row's adapters' updates: row i belongs to sequence seq[i], whose
// adapters are loras[seq[i]], applied in their order (so a row's result
// does not depend on the other rows). An adapter without a pair for w
// adds nothing. Each row gets out += (B·(A·x))·scale, as llama.cpp's
// build_lora_mm computes it.
func (ap *Applier) Add(mm *compute.MatMuler, out, x []float32, n int, w *compute.Tensor, seq []int32, loras [][]Scaled) error {
	if len(loras) == 0 {
		return nil
	}
	for j := 0; ; j++ {
		ap.adapters = ap.adapters[:0]
		for i := range n {
			if l := loras[seq[i]]; j < len(l) && !slices.Contains(ap.adapters, l[j].Adapter) {
				ap.adapters = append(ap.adapters, l[j].Adapter)
			}
		}
		if len(ap.adapters) == 0 {
			return nil
		}
		// Each row is in one group at place j: the groups' updates touch
		// other rows and can run in any order, or at once.
		ap.groups, ap.rows, ap.scales = ap.groups[:0], ap.rows[:0], ap.scales[:0]
		for _, a := range ap.adapters {
			p := a.Weights[w.Name]
			if p == nil {
				continue
			}
			if p.lowRank() == nil || mm.GGMLBatch {
				if err := ap.addPair(mm, out, x, n, w, p, a, j, seq, loras); err != nil {
					return fmt.Errorf("lora: %s: %w", a.Path, err)
				}
				continue
			}
			g := group{pair: p, lo: len(ap.rows)}
			for i := range n {
				if l := loras[seq[i]]; j < len(l) && l[j].Adapter == a {
					ap.rows = append(ap.rows, int32(i))
					ap.scales = append(ap.scales, p.Scale(a.Alpha, l[j].Scale))
				}
			}
			g.hi = len(ap.rows)
			g.cost = (g.hi - g.lo) * p.Rank() * (w.Cols() + w.Rows())
			ap.groups = append(ap.groups, g)
		}
		if err := ap.addGroups(mm, out, x, w); err != nil {
			return err
		}
	}
}

// addGroups adds the updates of ap.groups. With as many groups as workers
// or more, each share takes whole groups (the largest first, to the least
// loaded); with fewer, each group's A product runs first (on mm) and the
// shares take its output columns.
func (ap *Applier) addGroups(mm *compute.MatMuler, out, x []float32, w *compute.Tensor) error {
	if len(ap.groups) == 0 {
		return nil
	}
	total := 0
	for _, g := range ap.groups {
		total += g.cost
	}
	nw := 1
	if total >= parallelMACs {
		nw = mm.Workers()
	}
	for len(ap.workers) < nw {
		ap.workers = append(ap.workers, worker{mm: compute.NewMatMuler(1)})
	}
	ap.units = ap.units[:0]
	if len(ap.groups) >= nw {
		load := make([]int, nw) // at most a few workers: on the stack
		order := make([]int, len(ap.groups))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return ap.groups[b].cost - ap.groups[a].cost })
		for _, gi := range order {
			wi := 0
			for k := range load {
				if load[k] < load[wi] {
					wi = k
				}
			}
			load[wi] += ap.groups[gi].cost
			ap.units = append(ap.units, unit{g: gi, c0: 0, c1: w.Rows(), worker: wi})
		}
	} else {
		in, rank := w.Cols(), 0
		for gi := range ap.groups {
			g := &ap.groups[gi]
			m := g.hi - g.lo
			rank = g.pair.Rank()
			ap.x = grow(ap.x, m*in)
			for r, i := range ap.rows[g.lo:g.hi] {
				copy(ap.x[r*in:(r+1)*in], x[int(i)*in:(int(i)+1)*in])
			}
			g.t = make([]float32, m*rank) // TODO scratch
			if err := mm.MatMul(g.t, ap.x, m, g.pair.A); err != nil {
				return err
			}
			g.pair.lowRank().RoundT(g.t)
			per := (w.Rows()/16 + nw - 1) / nw * 16
			for wi := range nw {
				c0, c1 := wi*per, min(w.Rows(), (wi+1)*per)
				if wi == nw-1 {
					c1 = w.Rows()
				}
				if c0 < c1 {
					ap.units = append(ap.units, unit{g: gi, c0: c0, c1: c1, worker: wi})
				}
			}
		}
	}
	ap.job = job{out: out, x: x, in: w.Cols(), out_: w.Rows()}
	defer func() { ap.job = job{} }()
	if ap.share == nil {
		ap.share = ap.runShare
	}
	for wi := range nw {
		ap.workers[wi].err = nil
	}
	mm.Parallel(nw, ap.share)
	for wi := range nw {
		if err := ap.workers[wi].err; err != nil {
			return err
		}
	}
	return nil
}

// runShare runs share wi's units.
func (ap *Applier) runShare(wi int) {
	wk := &ap.workers[wi]
	for _, u := range ap.units {
		if u.worker == wi {
			if err := ap.runUnit(wk, u); err != nil {
				wk.err = err
				return
			}
		}
	}
}

// runUnit adds group u.g's updates to output columns [u.c0, u.c1) of its
// rows, its A product first unless computed already.
func (ap *Applier) runUnit(wk *worker, u unit) error {
	j, g := &ap.job, &ap.groups[u.g]
	low := g.pair.lowRank()
	rows, scales := ap.rows[g.lo:g.hi], ap.scales[g.lo:g.hi]
	m, rank, in := len(rows), low.Rank(), j.in
	t := g.t
	if t == nil {
		wk.x = grow(wk.x, m*in)
		for r, i := range rows {
			copy(wk.x[r*in:(r+1)*in], j.x[int(i)*in:(int(i)+1)*in])
		}
		wk.t = grow(wk.t, m*rank)
		t = wk.t
		if err := wk.mm.MatMul(t, wk.x, m, g.pair.A); err != nil {
			return err
		}
		low.RoundT(t)
	}
	step := max(16, panelBytes/(64*rank)*16)
	for c0 := u.c0; c0 < u.c1; c0 += step {
		c1 := min(u.c1, c0+step)
		for r, i := range rows {
			low.AddCols(j.out[int(i)*j.out_:(int(i)+1)*j.out_], t[r*rank:(r+1)*rank], scales[r], c0, c1)
		}
	}
	return nil
}

// addPair adds pair p of adapter a to the rows whose j-th adapter is a, by
// two MatMul calls (B neither F32 nor F16, or mm.GGMLBatch).
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
