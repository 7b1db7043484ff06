package compute

import (
	"fmt"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// tileBytes bounds the float32 scratch one worker dequantizes weight rows
// into before handing them to blas32.
const tileBytes = 256 << 10

// MatMuler multiplies activations by weight matrices of any supported type.
// Dense float32 products go through gonum's blas32 interface, so a faster
// BLAS registered with blas32.Use speeds them up without code changes here;
// quantized weights are dequantized a tile of rows at a time into per-worker
// scratch and multiplied the same way.
//
// A MatMuler is used by one goroutine at a time; it runs its own workers.
type MatMuler struct {
	workers int
	scratch [][]float32 // (workers) (tile rows * k)
}

// NewMatMuler returns a MatMuler splitting work over workers goroutines (at
// least 1).
func NewMatMuler(workers int) *MatMuler {
	if workers < 1 {
		workers = 1
	}
	return &MatMuler{workers: workers, scratch: make([][]float32, workers)}
}

// MatMul computes out = x · wᵀ: x holds m rows of k = w.Cols() values, w has
// n = w.Rows() rows, and out receives m rows of n values.
func (mm *MatMuler) MatMul(out, x []float32, m int, w *Tensor) error {
	k, n := w.Cols(), w.Rows()
	if len(x) < m*k || len(out) < m*n {
		return fmt.Errorf("matmul %s: x has %d values, out %d; want %d×%d and %d×%d", w.Name, len(x), len(out), m, k, m, n)
	}
	if m == 0 || n == 0 {
		return nil
	}
	// Split the n output columns into one contiguous range per worker.
	workers := min(mm.workers, n)
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for wi := range workers {
		lo, hi := wi*per, min(n, (wi+1)*per)
		if lo >= hi {
			continue
		}
		wg.Go(func() { errs[wi] = mm.rows(wi, out, x, m, w, lo, hi) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// rows computes output columns [lo, hi) on worker wi.
func (mm *MatMuler) rows(wi int, out, x []float32, m int, w *Tensor, lo, hi int) error {
	k, n := w.Cols(), w.Rows()
	X := blas32.General{Rows: m, Cols: k, Stride: k, Data: x[:m*k]}
	if w.Type == F32 {
		W := blas32.General{Rows: hi - lo, Cols: k, Stride: k, Data: f32View(w.Data)[lo*k : hi*k]}
		O := blas32.General{Rows: m, Cols: hi - lo, Stride: n, Data: out[lo:]}
		blas32.Gemm(blas.NoTrans, blas.Trans, 1, X, W, 0, O)
		return nil
	}
	tile := max(1, tileBytes/4/k)
	if cap(mm.scratch[wi]) < tile*k {
		mm.scratch[wi] = make([]float32, tile*k)
	}
	buf := mm.scratch[wi][:tile*k]
	rb := w.RowBytes()
	for r := lo; r < hi; r += tile {
		nr := min(tile, hi-r)
		if err := Dequantize(w.Type, w.Data[r*rb:(r+nr)*rb], buf[:nr*k]); err != nil {
			return fmt.Errorf("matmul %s: %w", w.Name, err)
		}
		W := blas32.General{Rows: nr, Cols: k, Stride: k, Data: buf[:nr*k]}
		O := blas32.General{Rows: m, Cols: nr, Stride: n, Data: out[r:]}
		blas32.Gemm(blas.NoTrans, blas.Trans, 1, X, W, 0, O)
	}
	return nil
}
