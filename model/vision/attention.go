package vision

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/troupe-llm/troupe/compute"
)

// attention is clip.cpp's build_attn without flash attention, head by
// head: K·Qᵀ and the weights' product with V as compute.GemmNN products
// (each output one fused multiply-add after another over its sum, not
// ggml's order: within the parity bounds), a softmax between. The heads
// are shared out over mm's crew, each worker claiming the next head and
// running it alone on its own scratch: one dispatch per layer, and a
// head's products stay in its worker's cache. GemmNN's bits do not depend
// on the rows a call takes, so the split changes no value. Queries go in
// blocks of attnRows rows, so that a block's scores stay in the L2 cache
// between the products.
type attention struct {
	n, hd int
	ws    []*attnWorker
}

// attnWorker is one worker's scratch.
type attnWorker struct {
	qh []float32 // (n, head_dim): one head's queries
	kp []float32 // its keys, transposed, in panels (pack)
	vp []float32 // its values in panels
	kq []float32 // (attnBlock, n): scores, then weights

	// Without GemmNN's assembly (spanMatMul): a one-worker MatMuler (it
	// runs on the calling goroutine), the block's output, and the first
	// error.
	mm  *compute.MatMuler
	kqv []float32
	err error
}

// gemmFast says whether attention and linear take GemmNN (its assembly);
// a variable so that tests run the MatMul path too.
var gemmFast = compute.GemmFast()

// attnBlock is the most query rows scored at once.
const attnBlock = 48

// attnRows is the query rows span scores at once over m keys: attnBlock,
// fewer where their scores would outgrow attnBytes, a multiple of GemmNN's
// 6-row tile (at least one). The weights' product with V reads a block's
// scores once for each panel of V: Gemma 3's 4096 keys by 48 rows would
// be 768 KiB, more than a Zen 3 core's L2.
func attnRows(m int) int {
	return min(attnBlock, max(6, attnBytes/(4*m)/6*6))
}

const attnBytes = 192 << 10

func newAttention(n, hd int) *attention { return &attention{n: n, hd: hd} }

// worker returns worker wi's scratch, made on first use.
func (a *attention) worker(wi int) *attnWorker {
	for len(a.ws) <= wi {
		a.ws = append(a.ws, &attnWorker{qh: make([]float32, a.n*a.hd), kp: make([]float32, a.hd*a.n), vp: make([]float32, a.n*a.hd), kq: make([]float32, attnBlock*a.n)})
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
	defer func() {
		for _, w := range a.ws[:workers] {
			w.err = nil
		}
	}()
	if win == nil && gemmFast {
		a.split(mm, workers, out, q, k, v, heads)
	} else {
		var next atomic.Int32
		mm.Parallel(workers, func(wi int) {
			w := a.ws[wi]
			for {
				h := int(next.Add(1) - 1)
				if h >= heads {
					return
				}
				if win != nil {
					a.windows(w, out, q, k, v, heads, h, win)
				} else {
					a.head(w, out, q, k, v, heads, h)
				}
			}
		})
	}
	for _, w := range a.ws[:workers] {
		if w.err != nil {
			return w.err
		}
	}
	return nil
}

// split is run without windows through GemmNN: the heads' blocks of query
// rows shared out by shareBlocks, each worker loading a head's queries,
// keys and values before its blocks (a row's output does not depend on the
// block it is in or the worker: the same bits).
func (a *attention) split(mm *compute.MatMuler, workers int, out, q, k, v []float32, heads int) {
	d, m := heads*a.hd, a.n
	block := attnRows(m)
	shareBlocks(mm, workers, heads, (m+block-1)/block, &attnJoins, func(wi, h int) bool {
		a.load(a.ws[wi], q, k, v, d, h, 0, m)
		return true
	}, func(wi, h, b int) {
		t0 := b * block
		a.block(a.ws[wi], out, d, h, 0, m, t0, min(block, m-t0))
	})
}

// attnJoins counts the heads split joined after their first worker (for
// the tests: that the path ran).
var attnJoins atomic.Int64

// head is run's head h over all rows, on worker w.
func (a *attention) head(w *attnWorker, out, q, k, v []float32, heads, h int) {
	a.span(w, out, q, k, v, heads*a.hd, h, 0, a.n)
}

// span is head h of rows [lo, hi) attending to those rows, on worker w;
// each row holds d values.
func (a *attention) span(w *attnWorker, out, q, k, v []float32, d, h, lo, hi int) {
	if !gemmFast {
		a.spanMatMul(w, out, q, k, v, d, h, lo, hi)
		return
	}
	a.load(w, q, k, v, d, h, lo, hi)
	block := attnRows(hi - lo)
	for t0 := 0; t0 < hi-lo; t0 += block {
		a.block(w, out, d, h, lo, hi-lo, t0, min(block, hi-lo-t0))
	}
}

// load copies head h's queries of rows [lo, hi) into w's scratch and packs
// its keys and values there.
func (a *attention) load(w *attnWorker, q, k, v []float32, d, h, lo, hi int) {
	hd, m := a.hd, hi-lo
	// The head's queries, copied together: read in place (rows d apart), a
	// tile's six rows fall in a few of the L1 cache's sets (K·Qᵀ ~3% slower).
	qh := w.qh[:m*hd]
	for t := range m {
		r := (lo+t)*d + h*hd
		copy(qh[t*hd:(t+1)*hd], q[r:r+hd])
	}
	// Kᵀ (hd, m) and V (m, hd) as panels of panel columns: GemmNN then
	// reads a panel's rows one after the other.
	pack(w.kp[:hd*m], k[lo*d+h*hd:], d, hd, m, true)
	pack(w.vp[:m*hd], v[lo*d+h*hd:], d, m, hd, false)
}

// block is query rows [lo+t0, lo+t0+rows) of head h over the m rows from
// lo that load put in w's scratch.
func (a *attention) block(w *attnWorker, out []float32, d, h, lo, m, t0, rows int) {
	hd := a.hd
	scale := 1 / float32(math.Sqrt(float64(hd)))
	qh, kp, vp, kq := w.qh[:m*hd], w.kp[:hd*m], w.vp[:m*hd], w.kq[:rows*m]
	// kq = K·Qᵀ per query row, as ggml_mul_mat(k, q) of F32 values.
	for j := 0; j < m; j += panel {
		pw := min(panel, m-j)
		compute.GemmNN(kq[j:], m, qh[t0*hd:], hd, kp[j*hd:], pw, rows, hd, pw)
	}
	for r := range rows {
		softmax(kq[r*m:(r+1)*m], scale)
	}
	o := out[(lo+t0)*d+h*hd:]
	for c := 0; c < hd; c += panel {
		pw := min(panel, hd-c)
		compute.GemmNN(o[c:], d, kq, m, vp[c*m:], pw, rows, m, pw)
	}
}

// spanMatMul is span through the MatMuler's float kernels (NEON on
// arm64), where GemmNN is not assembly: K·Qᵀ as the queries by the keys'
// rows, the weights by Vᵀ's rows (their summation order, not GemmNN's:
// other bits, within the parity bounds).
func (a *attention) spanMatMul(w *attnWorker, out, q, k, v []float32, d, h, lo, hi int) {
	hd, m := a.hd, hi-lo
	if w.mm == nil {
		w.mm, w.kqv = compute.NewMatMuler(1), make([]float32, attnBlock*hd)
	}
	scale := 1 / float32(math.Sqrt(float64(hd)))
	qh, kh, vt := w.qh[:m*hd], w.kp[:m*hd], w.vp[:hd*m]
	for t := range m {
		r := (lo+t)*d + h*hd
		copy(qh[t*hd:(t+1)*hd], q[r:r+hd])
		copy(kh[t*hd:(t+1)*hd], k[r:r+hd])
		for i := range hd {
			vt[i*m+t] = v[r+i]
		}
	}
	for t0 := 0; t0 < m && w.err == nil; t0 += attnBlock {
		rows := min(attnBlock, m-t0)
		kq, kqv := w.kq[:rows*m], w.kqv[:rows*hd]
		if w.err = w.mm.MatMul(kq, qh[t0*hd:(t0+rows)*hd], rows, f32Matrix(kh, hd, m)); w.err != nil {
			return
		}
		for r := range rows {
			softmax(kq[r*m:(r+1)*m], scale)
		}
		if w.err = w.mm.MatMul(kqv, kq, rows, f32Matrix(vt, m, hd)); w.err != nil {
			return
		}
		for r := range rows {
			copy(out[(lo+t0+r)*d+h*hd:(lo+t0+r)*d+(h+1)*hd], kqv[r*hd:(r+1)*hd])
		}
	}
}

// panel is the columns of a packed matrix's panels: GemmNN's widest tile.
const panel = 16

// pack writes the rows×cols matrix B (transposed: x holds its columns as
// rows, d apart; else its rows, d apart) into dst as panels of panel
// columns (the last one narrower), each panel's rows after one another:
// the panel of columns [j, j+w) holds B[p][j+c] at dst[j·rows+p·w+c].
func pack(dst, x []float32, d, rows, cols int, transposed bool) {
	for j := 0; j < cols; j += panel {
		w := min(panel, cols-j)
		pd := dst[j*rows : (j+w)*rows]
		if !transposed {
			for p := range rows {
				copy(pd[p*w:(p+1)*w], x[p*d+j:])
			}
			continue
		}
		compute.TransposePanel(pd, x[j*d:], d, rows, w)
	}
}

// checkWindows checks that win's windows are runs of consecutive rows.
func (a *attention) checkWindows(win [][2]int) error {
	for lo := 0; lo < a.n; {
		hi := win[lo][1]
		if win[lo][0] != lo || hi <= lo || hi > a.n {
			return fmt.Errorf("attention window [%d, %d) at row %d", win[lo][0], hi, lo)
		}
		lo = hi
	}
	return nil
}

// windows is head h of run with windows, on worker w: each window's rows
// attend to its own.
func (a *attention) windows(w *attnWorker, out, q, k, v []float32, heads, h int, win [][2]int) {
	for lo := 0; lo < a.n; lo = win[lo][1] {
		a.span(w, out, q, k, v, heads*a.hd, h, lo, win[lo][1])
	}
}
