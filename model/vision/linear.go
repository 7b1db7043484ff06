package vision

import (
	"sync"
	"sync/atomic"

	"github.com/troupe-llm/troupe/compute"
)

// linear sets out (m×n) = x (m×k) · wᵀ for the weight matrix w (n rows of
// k). F32 and F16 weights go through compute.GemmNN's register tiles: each
// worker packs its share of wᵀ's 16-column panels (compute.PackPanel, F16
// converted exactly), one panel at a time into its own scratch, and runs
// GemmNN over every row of x with it. For F16 weights x is first rounded to
// f16, as ggml (and compute.MatMuler.MatMul) converts the activations to the
// weights' type; the products are then exact and only the order of the sums
// differs from MatMul's. GemmNN's bits do not depend on the rows or columns
// a call takes, so the result is the same whatever the worker count. Other
// weight types go to mm.MatMul.
func linear(mm *compute.MatMuler, out, x []float32, m int, w *compute.Tensor) error {
	return linearAdd(mm, out, x, m, w, nil, nil)
}

// linearAdd is linear, then bias (n values; nil: none) added to every row
// of out (addRows), then out added to resid (m×n; nil: none;
// addParallel): with GemmNN, each block of out as its worker finishes it,
// not in passes of their own over the whole (the same operations on each
// value, so the same bits).
func linearAdd(mm *compute.MatMuler, out, x []float32, m int, w *compute.Tensor, bias, resid []float32) error {
	k, n := w.Cols(), w.Rows()
	if w.Type != compute.F32 && w.Type != compute.F16 || !gemmFast ||
		m <= 0 || n <= 0 || k <= 0 || len(x) < m*k || len(out) < m*n || len(w.Data) < n*w.RowBytes() ||
		bias != nil && len(bias) != n || resid != nil && len(resid) < m*n {
		// Where GemmNN is not assembly (arm64: NEON kernels), and
		// MatMul's checks and errors.
		if err := mm.MatMul(out, x, m, w); err != nil {
			return err
		}
		if bias != nil {
			addRows(mm, out[:m*n], bias)
		}
		if resid != nil {
			addParallel(mm, resid[:m*n], out[:m*n], n)
		}
		return nil
	}
	a := x[:m*k]
	if w.Type == compute.F16 {
		buf := getScratch(m * k)
		defer putScratch(buf)
		parallelRows(mm, m, func(lo, hi int) { compute.RoundF16s((*buf)[lo*k:hi*k], a[lo*k:hi*k]) })
		a = (*buf)[:m*k]
	}
	// The workers claim groups of panels one at a time, so that a worker
	// the system stops for a while (a shared machine) leaves its groups to
	// the other instead of making it wait at the end.
	panels := (n + panel - 1) / panel
	groups := (panels + linearGroup - 1) / linearGroup
	shares := min(mm.Workers(), groups)
	errs := make([]error, shares)
	var next atomic.Int32
	mm.Parallel(shares, func(wi int) {
		b := getScratch(linearGroup*panel*k + linearRows*panel)
		defer putScratch(b)
		pk, tail := (*b)[:linearGroup*panel*k], (*b)[linearGroup*panel*k:]
		for {
			g := int(next.Add(1)-1) * linearGroup
			if g >= panels {
				return
			}
			ge := min(panels, g+linearGroup)
			for p := g; p < ge; p++ {
				j := p * panel
				if err := compute.PackPanel(pk[(p-g)*panel*k:], w, j, min(panel, n-j)); err != nil {
					errs[wi] = err
					return
				}
			}
			for r := 0; r < m; r += linearRows {
				rows := min(linearRows, m-r)
				for p := g; p < ge; p++ {
					j := p * panel
					pw := min(panel, n-j)
					if pw%8 == 0 {
						compute.GemmNN(out[r*n+j:], n, a[r*k:], k, pk[(p-g)*panel*k:], panel, rows, k, pw)
						continue
					}
					// A last panel of n mod 8 columns: all 16 columns
					// in assembly (each output's sum depends on its
					// column alone) and the panel's copied out, not the
					// tail in GemmNN's Go.
					compute.GemmNN(tail, panel, a[r*k:], k, pk[(p-g)*panel*k:], panel, rows, k, panel)
					for i := range rows {
						copy(out[(r+i)*n+j:(r+i)*n+j+pw], tail[i*panel:i*panel+pw])
					}
				}
				if bias != nil || resid != nil {
					addBlock(out, bias, resid, n, r, rows, g*panel, min(n, ge*panel))
				}
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// addBlock adds bias[j0:j1] to rows [r, r+rows) of out (rows of n
// values), columns [j0, j1), then those values of out to resid's.
func addBlock(out, bias, resid []float32, n, r, rows, j0, j1 int) {
	for i := r; i < r+rows; i++ {
		o := out[i*n+j0 : i*n+j1]
		if bias != nil {
			compute.Add(o, bias[j0:j1])
		}
		if resid != nil {
			compute.Add(resid[i*n+j0:i*n+j1], o)
		}
	}
}

// linearGroup panels are packed at a time and run over blocks of
// linearRows rows of x (a multiple of GemmNN's 6-row tile), so that a block
// of rows is read from cache by every panel of the group. Measured on the
// shapes of SmolVLM's, Qwen3-VL's MLP (both directions): 4 and 96 run
// about as fast as the best of 1-8 and 18-192; no blocking runs 10-25%
// slower where x outgrows L2.
const linearGroup, linearRows = 4, 96

// scratch holds linear's buffers between calls.
var scratch sync.Pool

func getScratch(n int) *[]float32 {
	if b, ok := scratch.Get().(*[]float32); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]float32, n)
	return &b
}

func putScratch(b *[]float32) { scratch.Put(b) }
