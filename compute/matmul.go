package compute

import (
	"fmt"
	"unsafe"

	"gonum.org/v1/gonum/blas/gonum"
)

// tileBytes bounds the float32 scratch one worker dequantizes weight rows
// into before multiplying them.
const tileBytes = 256 << 10

// MatMuler multiplies activations by weight matrices of any supported type,
// with ggml's CPU arithmetic so that results track llama.cpp's:
//
//   - F32, F16 and BF16 weights: read as stored and converted on the fly
//     by the kernels of kern_f.go, against float32 activations (for F16 and
//     BF16 rounded to f16 or bf16 first, as ggml converts them to the
//     weight's vec_dot_type). Products of two such values are exact in
//     float32, so only the order of the sum differs from ggml.
//   - Quantized weights: each activation row is quantized once per call to
//     the weight type's vec_dot_type (Q8_0, Q8_1 or Q8_K, see quantize_act.go)
//     and every (token, weight row) pair takes an integer block dot product
//     (vecdot.go, vecdot_k.go).
//
// Every output value is computed the same way whatever the number of rows m
// and however the weight rows are split over workers: out[t·n + r] depends
// only on activation row t and weight row r, bit for bit (unless GGMLBatch is
// set). That makes a model's forward pass batch-invariant.
//
// Work is split over weight rows. A MatMuler is used by one goroutine at a
// time; it runs its own workers (crew.go). Its scratch grows to the largest call and is
// reused after that, so a quantized product allocates nothing once warm.
type MatMuler struct {
	// GGMLBatch sends activation rows in whole groups of four to the Q2_K
	// and Q4_K kernels of ggml's repacked gemm, as llama.cpp's CPU backend
	// does, to reproduce its logits bit for bit. A row's result then
	// depends on how many rows share the call and where it sits among them.
	// When false (the default), every row takes the one-row (gemv) kernel.
	// It also gives a call of one row by F32 weights ggml_vec_dot_f32's
	// order (llamafile's sgemm, whose order F32 takes otherwise, takes
	// only calls of two rows or more).
	GGMLBatch bool

	workers int
	crew    *crew        // runs the shares of a call
	share1  func(wi int) // mm.share with its error kept in errs, built once
	errs    []error      // (workers)
	job     job          // the call in flight
	scratch [][]float32  // (workers) (tile rows * k) dequantized weight rows
	xr      []float32    // (m * (k+floatPad)) activations for float weights (floatActs)
	xh      []uint16     // (m * (k+2·floatPad)) activations as bf16, for VDPBF16PS
	q8_0    []blockQ8_0  // (m * k/32) activations for Q4_0, Q5_0, Q8_0 weights
	q8_1    []blockQ8_1  // (m * k/32) activations for Q4_1, Q5_1 weights
	q8K     []blockQ8_K  // (m * k/256) activations for K-quant weights
	q8K4    []blockQ8_K  // q8K rearranged for the arm64 i8mm kernels (panelKernel.inter), or unused
}

// job is one MatMul call as the workers see it.
type job struct {
	out   []float32 // (m, n)
	x     []float32 // (m, k) activations: the caller's, or rounded into xr
	m     int
	w     *Tensor
	k     matKernel        // w's bound kernel
	per   int              // weight rows per worker
	after func(lo, hi int) // MatMulThen's, or nil
}

// NewMatMuler returns a MatMuler splitting work over workers goroutines (at
// least 1).
func NewMatMuler(workers int) *MatMuler {
	workers = max(workers, 1)
	mm := &MatMuler{workers: workers, crew: newCrew(workers - 1), scratch: make([][]float32, workers), errs: make([]error, workers)}
	mm.share1 = func(wi int) { mm.errs[wi] = mm.share(wi) }
	return mm
}

// MatMul computes out = x · wᵀ: x holds m rows of k = w.Cols() values, w has
// n = w.Rows() rows, and out receives m rows of n values.
func (mm *MatMuler) MatMul(out, x []float32, m int, w *Tensor) error {
	return mm.MatMulThen(out, x, m, w, nil)
}

// MatMulThen is MatMul, and then, on the worker that computed them, calls
// after(lo, hi) once output columns [lo, hi) of every row are final (the
// columns split into disjoint ranges, some of them at once on different
// workers), so that work on the product's columns (a LoRA update) shares
// its dispatch. after must not call mm's methods; nil: none.
func (mm *MatMuler) MatMulThen(out, x []float32, m int, w *Tensor, after func(lo, hi int)) error {
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
	kern := w.kernel()
	x = kern.prepare(mm, x[:m*k], m) // converted once, into scratch reused across calls

	// Split the rows over the workers, each share a whole number of steps.
	step := kern.rowStep()
	per := ((n+mm.workers-1)/mm.workers + step - 1) / step * step
	workers := (n + per - 1) / per
	mm.job = job{out: out, x: x, m: m, w: w, k: kern, per: per, after: after}
	defer func() { mm.job = job{} }() // drop the caller's buffers
	mm.crew.run(workers, mm.share1)
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
	lo, hi := wi*j.per, min(j.w.Rows(), (wi+1)*j.per)
	if lo >= hi {
		return nil
	}
	if err := j.k.rows(mm, wi, lo, hi); err != nil || j.after == nil {
		return err
	}
	j.after(lo, hi)
	return nil
}

// gemmRows computes output columns [lo, hi) of out (m rows of stride n) from
// x (m rows of k) and the float32 weight rows wRows (hi−lo rows of k values,
// ldw apart). Each output is one gonum Sdot of an activation row and a
// weight row over all k values, so it does not depend on m or on [lo, hi)
// (blas32.Gemm's does: gonum splits k into blocks of 64 once the product has
// enough 64×64 output blocks to run them in parallel). Sdot's SSE loop sums
// in an order set by the weight row's address modulo 16 bytes, which is
// fixed for a row of a mapped tensor and 0 for a row of scratch.
func gemmRows(out, x []float32, m int, wRows []float32, ldw, n, lo, hi int) {
	k := len(x) / m
	var blas gonum.Implementation
	for i := range m {
		xi := x[i*k : (i+1)*k]
		o := out[i*n+lo : i*n+hi]
		for r := range o {
			o[r] = blas.Sdot(k, xi, 1, wRows[r*ldw:r*ldw+k], 1)
		}
	}
}

// dequantRows computes the job's output columns [lo, hi) on worker wi by
// dequantizing a tile of weight rows at a time into the worker's scratch,
// each row starting on a 16-byte boundary.
func (mm *MatMuler) dequantRows(wi, lo, hi int) error {
	j := &mm.job
	w := j.w
	k, n := w.Cols(), w.Rows()
	ldw := (k + 3) &^ 3
	tile := max(1, tileBytes/4/ldw)
	buf := aligned16(grow(&mm.scratch[wi], tile*ldw+3))
	for r := lo; r < hi; r += tile {
		nr := min(tile, hi-r)
		if err := mm.dequantTile(buf, ldw, r, nr); err != nil {
			return err
		}
		gemmRows(j.out, j.x, j.m, buf, ldw, n, r, r+nr)
	}
	return nil
}

// dequantTile dequantizes the nr weight rows from r of the job's tensor into
// buf, ldw values apart.
func (mm *MatMuler) dequantTile(buf []float32, ldw, r, nr int) error {
	w := mm.job.w
	k, rb := w.Cols(), w.RowBytes()
	src := w.Data[r*rb : (r+nr)*rb]
	var err error
	if ldw == k { // no padding: all rows at once
		err = Dequantize(w.Type, src, buf[:nr*k])
	} else {
		for i := 0; i < nr && err == nil; i++ {
			err = Dequantize(w.Type, src[i*rb:(i+1)*rb], buf[i*ldw:i*ldw+k])
		}
	}
	if err != nil {
		return fmt.Errorf("matmul %s: %w", w.Name, err)
	}
	return nil
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

// aligned16 drops up to three values from the front of s so that it starts
// on a 16-byte boundary.
func aligned16(s []float32) []float32 {
	off := uintptr(unsafe.Pointer(unsafe.SliceData(s))) % 16
	return s[(16-off)%16/4:]
}

// grow returns (*s)[:n], reallocating *s first if it is too small.
func grow[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	}
	return (*s)[:n]
}
