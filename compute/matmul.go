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

// MatMuler multiplies activations by weight matrices of any supported type,
// with ggml's CPU arithmetic so that results track llama.cpp's:
//
//   - F32 weights: float32 activations through gonum's blas32 interface (a
//     faster BLAS registered with blas32.Use speeds them up).
//   - F16 and BF16 weights: activations rounded to f16 (bf16) first, as ggml
//     converts them to the weight's vec_dot_type; then a tile of weight rows
//     is dequantized into per-worker scratch and multiplied through blas32.
//     Products of two such values are exact in float32, so only the order of
//     the sum differs from ggml.
//   - Quantized weights: each activation row is quantized once per call to
//     the weight type's vec_dot_type (Q8_0, Q8_1 or Q8_K, see quantize_act.go)
//     and every (token, weight row) pair takes an integer block dot product
//     (vecdot.go, vecdot_k.go).
//
// Work is split over weight rows. A MatMuler is used by one goroutine at a
// time; it runs its own workers. Its scratch grows to the largest call and is
// reused after that, so a quantized product allocates nothing once warm.
type MatMuler struct {
	workers int
	run     []func()       // (workers) goroutine bodies, built once: worker wi's share of job
	wg      sync.WaitGroup // the workers of the call in flight
	errs    []error        // (workers)
	job     job            // the call in flight
	scratch [][]float32    // (workers) (tile rows * k) dequantized weight rows
	xr      []float32      // (m * k) activations rounded to f16 or bf16
	q8_0    []blockQ8_0    // (m * k/32) activations for Q4_0, Q5_0, Q8_0 weights
	q8_1    []blockQ8_1    // (m * k/32) activations for Q4_1, Q5_1 weights
	q8K     []blockQ8_K    // (m * k/256) activations for K-quant weights
}

// job is one MatMul call as the workers see it.
type job struct {
	out []float32 // (m, n)
	x   []float32 // (m, k) activations: the caller's, or rounded into xr
	m   int
	w   *Tensor
	per int // weight rows per worker
}

// NewMatMuler returns a MatMuler splitting work over workers goroutines (at
// least 1).
func NewMatMuler(workers int) *MatMuler {
	workers = max(workers, 1)
	mm := &MatMuler{workers: workers, scratch: make([][]float32, workers), errs: make([]error, workers)}
	mm.run = make([]func(), workers)
	for wi := range mm.run {
		mm.run[wi] = func() {
			defer mm.wg.Done()
			mm.errs[wi] = mm.share(wi)
		}
	}
	return mm
}

// MatMul computes out = x · wᵀ: x holds m rows of k = w.Cols() values, w has
// n = w.Rows() rows, and out receives m rows of n values.
func (mm *MatMuler) MatMul(out, x []float32, m int, w *Tensor) error {
	k, n := w.Cols(), w.Rows()
	if len(x) < m*k || len(out) < m*n {
		return fmt.Errorf("matmul %s: x has %d values, out %d; want %d×%d and %d×%d", w.Name, len(x), len(out), m, k, m, n)
	}
	rb, err := w.Type.RowSize(k)
	if err != nil {
		return fmt.Errorf("matmul %s: %w", w.Name, err)
	}
	if len(w.Data) < n*rb {
		return fmt.Errorf("matmul %s: %d bytes of data, %d rows of %d need %d", w.Name, len(w.Data), n, rb, n*rb)
	}
	if m == 0 || n == 0 {
		return nil
	}
	x = x[:m*k]
	// Convert the activations once, into scratch reused across calls.
	switch t := w.Type; {
	case t == F16 || t == BF16:
		xr := grow(&mm.xr, m*k)
		if t == F16 {
			roundRowF16(x, xr)
		} else {
			roundRowBF16(x, xr)
		}
		x = xr
	case vecDotQ8_0Kernel(t) != nil:
		quantizeRows(&mm.q8_0, x, m, k/32, quantizeRowQ8_0)
	case vecDotQ8_1Kernel(t) != nil:
		quantizeRows(&mm.q8_1, x, m, k/32, quantizeRowQ8_1)
	case vecDotQ8_KKernel(t) != nil:
		quantizeRows(&mm.q8K, x, m, k/QK_K, quantizeRowQ8_K)
	}

	workers := min(mm.workers, n)
	mm.job = job{out: out, x: x, m: m, w: w, per: (n + workers - 1) / workers}
	defer func() { mm.job = job{} }() // drop the caller's buffers
	if workers == 1 {
		return mm.share(0)
	}
	mm.wg.Add(workers)
	for wi := range workers {
		go mm.run[wi]()
	}
	mm.wg.Wait()
	for _, err := range mm.errs[:workers] {
		if err != nil {
			return err
		}
	}
	return nil
}

// share computes worker wi's weight rows [wi·per, (wi+1)·per) of the job.
func (mm *MatMuler) share(wi int) error {
	j := &mm.job
	w, m := j.w, j.m
	n, rb := w.Rows(), w.RowBytes()
	lo, hi := wi*j.per, min(n, (wi+1)*j.per)
	if lo >= hi {
		return nil
	}
	switch t := w.Type; {
	case t == F32:
		k := w.Cols()
		gemmRows(j.out, j.x, m, f32View(w.Data)[lo*k:hi*k], n, lo, hi)
	case vecDotQ8_0Kernel(t) != nil:
		dotRows(j.out, mm.q8_0[:m*w.Cols()/32], m, n, w.Data, rb, lo, hi, vecDotQ8_0Kernel(t), nil)
	case vecDotQ8_1Kernel(t) != nil:
		dotRows(j.out, mm.q8_1[:m*w.Cols()/32], m, n, w.Data, rb, lo, hi, vecDotQ8_1Kernel(t), nil)
	case vecDotQ8_KKernel(t) != nil:
		dotRows(j.out, mm.q8K[:m*w.Cols()/QK_K], m, n, w.Data, rb, lo, hi, vecDotQ8_KKernel(t), vecDotQ8_KBatchKernel(t))
	default:
		// F16, BF16 (with rounded activations), and types without a block
		// dot product in ggml either (e.g. Q8_K weights): dequantize and
		// multiply in float32.
		return mm.dequantRows(wi, lo, hi)
	}
	return nil
}

// gemmRows computes output columns [lo, hi) of out (m rows of stride n) from
// x (m rows of k) and the float32 weight rows wRows (hi−lo rows of k).
func gemmRows(out, x []float32, m int, wRows []float32, n, lo, hi int) {
	k := len(x) / m
	X := blas32.General{Rows: m, Cols: k, Stride: k, Data: x}
	W := blas32.General{Rows: hi - lo, Cols: k, Stride: k, Data: wRows}
	O := blas32.General{Rows: m, Cols: hi - lo, Stride: n, Data: out[lo:]}
	blas32.Gemm(blas.NoTrans, blas.Trans, 1, X, W, 0, O)
}

// dequantRows computes the job's output columns [lo, hi) on worker wi by
// dequantizing a tile of weight rows at a time into the worker's scratch.
func (mm *MatMuler) dequantRows(wi, lo, hi int) error {
	j := &mm.job
	w := j.w
	k, n := w.Cols(), w.Rows()
	tile := max(1, tileBytes/4/k)
	buf := grow(&mm.scratch[wi], tile*k)
	rb := w.RowBytes()
	for r := lo; r < hi; r += tile {
		nr := min(tile, hi-r)
		if err := Dequantize(w.Type, w.Data[r*rb:(r+nr)*rb], buf[:nr*k]); err != nil {
			return fmt.Errorf("matmul %s: %w", w.Name, err)
		}
		gemmRows(j.out, j.x, j.m, buf[:nr*k], n, r, r+nr)
	}
	return nil
}

// quantizeRows quantizes the m activation rows of x, nb blocks each, into
// *dst (grown if needed).
func quantizeRows[B any](dst *[]B, x []float32, m, nb int, quantize func([]float32, []B)) {
	y := grow(dst, m*nb)
	k := len(x) / m
	for t := range m {
		quantize(x[t*k:(t+1)*k], y[t*nb:(t+1)*nb])
	}
}

// dotRows computes output columns [lo, hi): out[t·n + r] is the dot product
// of weight row r (rb bytes of data) with quantized activation row t. Each
// weight row is read once and used for all m activation rows. When batch is
// not nil and m ≥ 4, the rows in whole groups of four use it instead of dot,
// as ggml's repacked kernels send those rows to a gemm with its own order of
// float additions.
func dotRows[B any](out []float32, xq []B, m, n int, data []byte, rb, lo, hi int, dot, batch func([]byte, []B) float32) {
	nb := len(xq) / m
	grouped := 0
	if batch != nil && m >= 4 {
		grouped = m - m%4
	}
	for r := lo; r < hi; r++ {
		row := data[r*rb : (r+1)*rb]
		for t := range grouped {
			out[t*n+r] = batch(row, xq[t*nb:(t+1)*nb])
		}
		for t := grouped; t < m; t++ {
			out[t*n+r] = dot(row, xq[t*nb:(t+1)*nb])
		}
	}
}

// grow returns (*s)[:n], reallocating *s first if it is too small.
func grow[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	}
	return (*s)[:n]
}
