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
// product: rows that share an adapter are gathered and take two products
// (A, then B) together, so a micro-batch mixing adapters costs about one
// small product pair per adapter. Its scratch grows to the largest call
// and is reused.
type Applier struct {
	adapters []*Adapter // the distinct adapters at one place in the rows' lists
	rows     []int32    // (m) the batch rows of one adapter
	x        []float32  // (m, in) their inputs, gathered
	t        []float32  // (m, rank) A·x
	y        []float32  // (m, out) B·A·x
}

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
		for _, a := range ap.adapters {
			if p := a.Weights[w.Name]; p != nil {
				if err := ap.addPair(mm, out, x, n, w, p, a, j, seq, loras); err != nil {
					return fmt.Errorf("lora: %s: %w", a.Path, err)
				}
			}
		}
	}
}

// addPair adds pair p of adapter a to the rows whose j-th adapter is a.
func (ap *Applier) addPair(mm *compute.MatMuler, out, x []float32, n int, w *compute.Tensor, p *Pair, a *Adapter, j int, seq []int32, loras [][]Scaled) error {
	in, nOut, rank := w.Cols(), w.Rows(), p.Rank()
	ap.rows = ap.rows[:0]
	for i := range n {
		if l := loras[seq[i]]; j < len(l) && l[j].Adapter == a {
			ap.rows = append(ap.rows, int32(i))
		}
	}
	m := len(ap.rows)
	ap.x = grow(ap.x, m*in)
	ap.t = grow(ap.t, m*rank)
	ap.y = grow(ap.y, m*nOut)
	for r, i := range ap.rows {
		copy(ap.x[r*in:(r+1)*in], x[int(i)*in:(int(i)+1)*in])
	}
	if err := mm.MatMul(ap.t, ap.x, m, p.A); err != nil {
		return err
	}
	if err := mm.MatMul(ap.y, ap.t, m, p.B); err != nil {
		return err
	}
	for r, i := range ap.rows {
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
