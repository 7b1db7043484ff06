package vision

import (
	"fmt"
	"math"

	"github.com/troupe-llm/troupe/compute"
)

// attention is clip.cpp's build_attn without flash attention, head by
// head: K·Qᵀ and the weights' product with V as F32 matrix products, a
// softmax between. Its scratch is sized for n rows of head_dim values;
// queries go in blocks of at most attnBlock rows so the scores of a large
// image stay bounded.
type attention struct {
	n, hd int
	hdp   int       // head_dim rounded up to 16: run's query and key rows, zero padded
	qh    []float32 // (n, hdp): one head's queries
	kh    []float32 // (n, hdp): its keys
	vt    []float32 // (head_dim, n): its values, transposed
	kq    []float32 // (block, n): scores, then weights
	kqv   []float32 // (block, head_dim)
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
	return &attention{n: n, hd: hd, hdp: hdp, qh: make([]float32, n*hdp), kh: make([]float32, n*hdp),
		vt: make([]float32, hd*n), kq: make([]float32, block*n), kqv: make([]float32, block*hd)}
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
		return a.windows(mm, out, q, k, v, heads, win)
	}
	n, hd, hdp := a.n, a.hd, a.hdp
	d := heads * hd
	block := len(a.kq) / n
	scale := 1 / float32(math.Sqrt(float64(hd)))
	for h := range heads {
		parallelRows(mm, n, func(lo, hi int) {
			for t := lo; t < hi; t++ {
				copy(a.qh[t*hdp:t*hdp+hd], q[t*d+h*hd:])
				copy(a.kh[t*hdp:t*hdp+hd], k[t*d+h*hd:])
				for i := range hd {
					a.vt[i*n+t] = v[t*d+h*hd+i]
				}
			}
		})
		for t0 := 0; t0 < n; t0 += block {
			rows := min(block, n-t0)
			kq := a.kq[:rows*n]
			// kq = K·Qᵀ per query row, as ggml_mul_mat(k, q) of F32 values.
			if err := mm.MatMul(kq, a.qh[t0*hdp:(t0+rows)*hdp], rows, f32Matrix(a.kh, hdp, n)); err != nil {
				return err
			}
			parallelRows(mm, rows, func(r0, r1 int) {
				for r := r0; r < r1; r++ {
					softmax(kq[r*n:(r+1)*n], scale)
				}
			})
			kqv := a.kqv[:rows*hd]
			if err := mm.MatMul(kqv, kq, rows, f32Matrix(a.vt, n, hd)); err != nil {
				return err
			}
			for r := range rows {
				copy(out[(t0+r)*d+h*hd:(t0+r)*d+(h+1)*hd], kqv[r*hd:(r+1)*hd])
			}
		}
	}
	return nil
}

// windows is run with windows: each window's rows attend to its own.
func (a *attention) windows(mm *compute.MatMuler, out, q, k, v []float32, heads int, win [][2]int) error {
	hd := a.hd
	d := heads * hd
	scale := 1 / float32(math.Sqrt(float64(hd)))
	for lo := 0; lo < a.n; {
		hi := win[lo][1]
		m := hi - lo
		if win[lo][0] != lo || m < 1 || m*m > len(a.kq) || m*hd > len(a.kqv) {
			return fmt.Errorf("attention window [%d, %d) at row %d", win[lo][0], hi, lo)
		}
		for h := range heads {
			for t := range m {
				copy(a.qh[t*hd:(t+1)*hd], q[(lo+t)*d+h*hd:])
				copy(a.kh[t*hd:(t+1)*hd], k[(lo+t)*d+h*hd:])
				for i := range hd {
					a.vt[i*m+t] = v[(lo+t)*d+h*hd+i]
				}
			}
			kq := a.kq[:m*m]
			if err := mm.MatMul(kq, a.qh[:m*hd], m, f32Matrix(a.kh[:m*hd], hd, m)); err != nil {
				return err
			}
			parallelRows(mm, m, func(r0, r1 int) {
				for r := r0; r < r1; r++ {
					softmax(kq[r*m:(r+1)*m], scale)
				}
			})
			kqv := a.kqv[:m*hd]
			if err := mm.MatMul(kqv, kq, m, f32Matrix(a.vt[:hd*m], m, hd)); err != nil {
				return err
			}
			for r := range m {
				copy(out[(lo+r)*d+h*hd:(lo+r)*d+(h+1)*hd], kqv[r*hd:(r+1)*hd])
			}
		}
		lo = hi
	}
	return nil
}
