package vision

import (
	"sync"
	"sync/atomic"

	"github.com/troupe-llm/troupe/compute"
)

// linear sets out (m×n) = x (m×k) · wᵀ for the weight matrix w (n rows of
// k). F32 and F16 weights go through compute.GemmPacked's register tiles:
// x is packed once (compute.PackRows), then each worker packs a group of
// wᵀ's columns at a time into its own scratch (compute.PackCols, F16
// converted exactly) and runs GemmPacked over every row of x with it. For
// F16 weights x is rounded to f16 as it is packed, as ggml (and
// compute.MatMuler.MatMul) converts the activations to the weights' type;
// the products are then exact and only the order of the sums differs from
// MatMul's. GemmPacked's bits (GemmNN's) do not depend on the rows or
// columns a call takes, so the result is the same whatever the worker
// count. Other weight types go to mm.MatMul.
func linear(mm *compute.MatMuler, out, x []float32, m int, w *compute.Tensor) error {
	return linearAdd(mm, out, x, m, w, nil, nil)
}

// linearAdd is linear, then bias (n values; nil: none) added to every row
// of out (addRows), then out added to resid (m×n; nil: none;
// addParallel): with GemmPacked, each block of out as its worker finishes it,
// not in passes of their own over the whole (the same operations on each
// value, so the same bits).
func linearAdd(mm *compute.MatMuler, out, x []float32, m int, w *compute.Tensor, bias, resid []float32) error {
	k, n := w.Cols(), w.Rows()
	if w.Type != compute.F32 && w.Type != compute.F16 || !gemmFast ||
		m <= 0 || n <= 0 || k <= 0 || len(x) < m*k || len(out) < m*n || len(w.Data) < n*w.RowBytes() ||
		bias != nil && len(bias) != n || resid != nil && len(resid) < m*n {
		// Where GemmPacked is not assembly (arm64: NEON kernels), and
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
	// x as compute.GemmPacked's A (micro-panels of mr rows), each worker
	// packing its share, rounded to f16 for F16 weights.
	mp, mr := compute.PackedRows(m), compute.PackedRows(1)
	buf := getScratch(mp * k)
	defer putScratch(buf)
	a := (*buf)[:mp*k]
	parallelRows(mm, mp/mr, func(lo, hi int) {
		r0, r1 := mr*lo, mr*hi
		compute.PackRows(a[r0*k:r1*k], x[r0*k:], k, min(m, r1)-r0, k, w.Type == compute.F16)
	})
	// Groups of linearCols columns by blocks of linearRows rows, shared
	// out by shareBlocks: a worker packs a group's weights as GemmPacked's
	// B, then runs its blocks.
	groups := (n + linearCols - 1) / linearCols
	shares := min(mm.Workers(), groups)
	errs := make([]error, shares)
	pks := make([]*[]float32, shares)
	defer func() {
		for _, pk := range pks {
			if pk != nil {
				putScratch(pk)
			}
		}
	}()
	shareBlocks(mm, shares, groups, (m+linearRows-1)/linearRows, &linearJoins, func(wi, g int) bool {
		if pks[wi] == nil {
			pks[wi] = getScratch(linearCols * k)
		}
		j0 := g * linearCols
		if err := compute.PackCols(*pks[wi], w, j0, min(n, j0+linearCols)-j0); err != nil {
			errs[wi] = err
			return false
		}
		return true
	}, func(wi, g, b int) {
		j0, r := g*linearCols, b*linearRows
		j1, rows := min(n, j0+linearCols), min(linearRows, m-r)
		compute.GemmPacked(out[r*n+j0:], n, a[r*k:], *pks[wi], rows, k, j1-j0)
		if bias != nil || resid != nil {
			addBlock(out, bias, resid, n, r, rows, j0, j1)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// linearJoins counts the groups linearAdd's workers joined after their
// first (for the tests: that the path ran).
var linearJoins atomic.Int64

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

// linearCols columns of out (a multiple of GemmPacked's 24-column panels)
// are packed at a time and run over blocks of linearRows rows of x (a
// multiple of its 4-row micro-panels, so that a block starts at row r·k of
// the packed x). Within GemmPacked a block of rows by a panel of columns
// comes from L2 and L1 whatever the size of the group and of the block;
// their size sets how often the packed x and the group are read from L3
// or memory. Measured on Qwen2-VL's four shapes (BenchmarkLinear): 96 by
// 96, 96 by 192, 192 by 96 and 144 by 144 run alike within this shared
// machine's noise (±5%).
const linearCols, linearRows = 96, 96

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
