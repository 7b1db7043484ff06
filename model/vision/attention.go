package vision

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/troupe-llm/troupe/compute"
)

// attention is clip.cpp's build_attn without flash attention, head by
// head: K·Qᵀ and the weights' product with V as F32 matrix products, a
// softmax between. The heads are shared out over mm's crew, each worker
// claiming the next head and running it alone on its own scratch and its
// own one-worker MatMuler: one dispatch per layer rather than three per
// head (and per window), and a head's products stay in its worker's cache.
// A float product's bits do not depend on the workers or the rows a call
// takes (compute's float kernels), so the split changes no value. Each
// worker's scratch is sized for n rows of head_dim values; queries go in
// blocks of at most attnBlock rows so the scores of a large image stay
// bounded.
type attention struct {
	n, hd int
	hdp   int // head_dim rounded up to 16: run's query and key rows, zero padded
	block int // query rows scored at once
	ws    []*attnWorker
}

// attnWorker is one worker's scratch.
type attnWorker struct {
	mm  *compute.MatMuler // one worker: runs on the calling goroutine
	qh  []float32         // (n, hdp): one head's queries
	kh  []float32         // (n, hdp): its keys
	vt  []float32         // (head_dim, n): its values, transposed
	kq  []float32         // (block, n): scores, then weights
	kqv []float32         // (block, head_dim)
}

// attnBlock is the most query rows scored at once (for images of more
// than twice as many patches; smaller ones are scored in one product).
const attnBlock = 512

func newAttention(n, hd int) *attention {
	block := n
	if n > 2*attnBlock {
		block = attnBlock
	}
	// A head_dim that is no multiple of 16 (Gemma 3's 72) would leave
	// K·Qᵀ's float kernel a tail it sums element by element in Go; zeros
	// pad it instead (another summation order, within the parity bounds).
	hdp := (hd + 15) / 16 * 16
	return &attention{n: n, hd: hd, hdp: hdp, block: block}
}

// worker returns worker wi's scratch, made on first use.
func (a *attention) worker(wi int) *attnWorker {
	for len(a.ws) <= wi {
		n, hdp := a.n, a.hdp
		a.ws = append(a.ws, &attnWorker{mm: compute.NewMatMuler(1), qh: make([]float32, n*hdp), kh: make([]float32, n*hdp),
			vt: make([]float32, a.hd*n), kq: make([]float32, a.block*n), kqv: make([]float32, a.block*a.hd)})
	}
	return a.ws[wi]
}

// run writes the attention of q over k and v ((n, heads·head_dim) each)
// into out. win, when not nil, is each row's window [lo, hi), the rows of
// a window consecutive: its scores outside it are masked
// (ggml_soft_max_ext's -FLT_MAX mask: their weights are zero), so each
// window is computed alone, its rows over its keys only (the products
// then sum fewer zero terms than ggml's, in another order: not the same
// bits, within TestParityEmbeddings' bound).
func (a *attention) run(mm *compute.MatMuler, out, q, k, v []float32, heads int, win [][2]int) error {
	if win != nil {
		if err := a.checkWindows(win); err != nil {
			return err
		}
	}
	workers := min(mm.Workers(), heads)
	for wi := range workers {
		a.worker(wi)
	}
	var next atomic.Int32
	errs := make([]error, workers)
	mm.Parallel(workers, func(wi int) {
		w := a.ws[wi]
		for {
			h := int(next.Add(1) - 1)
			if h >= heads {
				return
			}
			var err error
			if win != nil {
				err = a.windows(w, out, q, k, v, heads, h, win)
			} else {
				err = a.head(w, out, q, k, v, heads, h)
			}
			if err != nil {
				errs[wi] = err
				return
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

// head is run's head h over all rows, on worker w.
func (a *attention) head(w *attnWorker, out, q, k, v []float32, heads, h int) error {
	n, hd, hdp := a.n, a.hd, a.hdp
	d := heads * hd
	scale := 1 / float32(math.Sqrt(float64(hd)))
	for t := range n {
		copy(w.qh[t*hdp:t*hdp+hd], q[t*d+h*hd:])
		copy(w.kh[t*hdp:t*hdp+hd], k[t*d+h*hd:])
		for i := range hd {
			w.vt[i*n+t] = v[t*d+h*hd+i]
		}
	}
	for t0 := 0; t0 < n; t0 += a.block {
		rows := min(a.block, n-t0)
		kq := w.kq[:rows*n]
		// kq = K·Qᵀ per query row, as ggml_mul_mat(k, q) of F32 values.
		if err := w.mm.MatMul(kq, w.qh[t0*hdp:(t0+rows)*hdp], rows, f32Matrix(w.kh, hdp, n)); err != nil {
			return err
		}
		for r := range rows {
			softmax(kq[r*n:(r+1)*n], scale)
		}
		kqv := w.kqv[:rows*hd]
		if err := w.mm.MatMul(kqv, kq, rows, f32Matrix(w.vt, n, hd)); err != nil {
			return err
		}
		for r := range rows {
			copy(out[(t0+r)*d+h*hd:(t0+r)*d+(h+1)*hd], kqv[r*hd:(r+1)*hd])
		}
	}
	return nil
}

// checkWindows checks that win's windows are runs of consecutive rows
// that fit the scratch.
func (a *attention) checkWindows(win [][2]int) error {
	for lo := 0; lo < a.n; {
		hi := win[lo][1]
		m := hi - lo
		if win[lo][0] != lo || m < 1 || hi > a.n || m*m > a.block*a.n || m*a.hd > a.block*a.hd {
			return fmt.Errorf("attention window [%d, %d) at row %d", win[lo][0], hi, lo)
		}
		lo = hi
	}
	return nil
}

// windows is head h of run with windows, on worker w: each window's rows
// attend to its own.
func (a *attention) windows(w *attnWorker, out, q, k, v []float32, heads, h int, win [][2]int) error {
	hd := a.hd
	d := heads * hd
	scale := 1 / float32(math.Sqrt(float64(hd)))
	for lo := 0; lo < a.n; {
		hi := win[lo][1]
		m := hi - lo
		for t := range m {
			copy(w.qh[t*hd:(t+1)*hd], q[(lo+t)*d+h*hd:])
			copy(w.kh[t*hd:(t+1)*hd], k[(lo+t)*d+h*hd:])
			for i := range hd {
				w.vt[i*m+t] = v[(lo+t)*d+h*hd+i]
			}
		}
		kq := w.kq[:m*m]
		if err := w.mm.MatMul(kq, w.qh[:m*hd], m, f32Matrix(w.kh[:m*hd], hd, m)); err != nil {
			return err
		}
		for r := range m {
			softmax(kq[r*m:(r+1)*m], scale)
		}
		kqv := w.kqv[:m*hd]
		if err := w.mm.MatMul(kqv, kq, m, f32Matrix(w.vt[:hd*m], m, hd)); err != nil {
			return err
		}
		for r := range m {
			copy(out[(lo+r)*d+h*hd:(lo+r)*d+(h+1)*hd], kqv[r*hd:(r+1)*hd])
		}
		lo = hi
	}
	return nil
}
