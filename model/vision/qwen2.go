package vision

import (
	"fmt"
	"sync"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// Qwen2-VL (clip.cpp's clip_graph_qwen2vl with PROJECTOR_TYPE_QWEN2VL):
// Qwen2.5-VL's graph and preprocessing (qwen.go) with NORM_TYPE_NORMAL
// where Qwen2.5-VL has NORM_TYPE_RMS (layer norms with biases, the
// merger's ln_q as v.post_ln), a feed-forward without a gate whose
// activation is the file's (clip.use_gelu, else quick GELU, as Qwen2-VL's
// converted files have), and no n_wa_pattern: every layer attends to the
// whole image, the patches in 2×2 groups row by row (as Qwen3-VL's).

// encodeQwen2 is clip_graph_qwen2vl::build for a Qwen2-VL image: (rows,
// projDim) values, rows row-major over the merged grid.
func (p *Projector) encodeQwen2(mm *compute.MatMuler, px *pixels) ([]float32, error) {
	hp, w := &p.hp, p.w
	d := hp.dim
	raster, npx, npy, err := p.qwenPatches(mm, px)
	if err != nil {
		return nil, err
	}
	n := npx * npy
	lay := newQwenLayout(npx, npy, 0) // one window: 2×2 groups row by row
	x := make([]float32, n*d)         // (patches, dim): the residual stream, graph order
	for i, src := range lay.patch {
		copy(x[i*d:(i+1)*d], raster[src*d:(src+1)*d])
	}
	if w.preW != nil {
		normRows(mm, x, x, d, w.preW, w.preB, hp.eps)
	}
	sc := newQwenScratch(n, d, hp.heads, hp.ffn, lay, false)
	for li := range w.layers {
		if err := p.qwen2Layer(mm, &w.layers[li], x, sc); err != nil {
			return nil, err
		}
	}
	if w.postW != nil {
		normRows(mm, x, x, d, w.postW, w.postB, hp.eps)
	}
	return p.qwenMerger(mm, x, n, lay)
}

// qwen2Layer is one Qwen2-VL ViT layer on the residual stream x: layer
// norm, q, k, v with biases and 2-D rope, attention over all patches, the
// output projection; layer norm and the feed-forward.
func (p *Projector) qwen2Layer(mm *compute.MatMuler, lw *layerWeights, x []float32, sc *qwenScratch) error {
	hp := &p.hp
	normRows(mm, sc.cur, x, hp.dim, lw.ln1w, lw.ln1b, hp.eps)
	if err := sc.qkvRope(mm, lw, hp.heads); err != nil {
		return err
	}
	if err := sc.attend(mm, lw, x, hp.heads, nil); err != nil {
		return err
	}
	normRows(mm, sc.cur, x, hp.dim, lw.ln2w, lw.ln2b, hp.eps)
	return p.plainFFN(mm, lw, x, sc)
}

// qkvRope sets the scratch's queries, keys and values from its current
// rows (cur: the layer norm's output) by a layer's separate q, k and v
// projections with their biases, and rotates the queries and keys. It is
// also qwenLayer's (Qwen2.5-VL's) first half, written there in line.
func (s *qwenScratch) qkvRope(mm *compute.MatMuler, lw *layerWeights, heads int) error {
	n, d := s.n, len(s.cur)/s.n
	for _, m := range []struct {
		dst  []float32
		w    *compute.Tensor
		bias []float32
	}{{s.q, lw.q, lw.qb}, {s.kk, lw.k, lw.kb}, {s.v, lw.v, lw.vb}} {
		if err := linear(mm, m.dst, s.cur, n, m.w); err != nil {
			return err
		}
		if m.bias != nil {
			addRows(mm, m.dst, m.bias)
		}
	}
	parallelRows(mm, n, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			s.ropeQK(t, d, heads)
		}
	})
	return nil
}

// plainFFN is a feed-forward without a gate on the scratch's current rows
// (cur: the second layer norm's output), added to the residual stream x:
// up with its bias, the file's activation (hp.ffnOp: quick GELU or GELU),
// down with its bias. It is also qwen3Layer's (Qwen3-VL's, GELU) second
// half, written there in line.
func (p *Projector) plainFFN(mm *compute.MatMuler, lw *layerWeights, x []float32, sc *qwenScratch) error {
	ffn, up := p.hp.ffn, sc.up
	if err := linear(mm, up, sc.cur, sc.n, lw.up); err != nil {
		return err
	}
	if lw.upb != nil {
		addRows(mm, up, lw.upb)
	}
	act := gelu
	if p.hp.ffnOp == "gelu_quick" {
		act = geluQuick
	}
	parallelRows(mm, sc.n, func(lo, hi int) { act(up[lo*ffn : hi*ffn]) })
	return sc.down(mm, lw, x)
}

// qwen2FFN is a Qwen2-VL file's feed-forward width, from its tensors as
// clip.cpp takes it: the converter writes the vision config's hidden_size
// (the merger's output width) as clip.vision.feed_forward_length. It is
// ffn_down's input width, or ffn_up's when the names are swapped as
// clip.cpp detects it (ffn_down's rows of the ViT's width d).
func qwen2FFN(f *gguf.File, d int) (int, error) {
	t, err := f.Tensor("v.blk.0.ffn_down.weight")
	if err != nil || len(t.Shape) != 2 {
		return 0, fmt.Errorf("tensor %q: want a matrix (%v)", "v.blk.0.ffn_down.weight", err)
	}
	ffn := t.Shape[0]
	if ffn == d {
		ffn = t.Shape[1]
	}
	if ffn < 1 || ffn > 1<<20 {
		return 0, fmt.Errorf("feed-forward width %d: out of range", ffn)
	}
	return ffn, nil
}

// geluQuick is ggml_vec_gelu_quick_f32 with GGML_GELU_QUICK_FP16: each
// value rounded to half and looked up in ggml's half table of
// x·(1/(1+e^(−1.702·x))), widened.
func geluQuick(x []float32) {
	t := geluQuickF16()
	for i, v := range x {
		x[i] = compute.FP16ToFP32(t[compute.FP32ToFP16(v)])
	}
}

// geluQuickF16 is ggml's ggml_table_gelu_quick_f16, built on first use:
// for every half h, the half nearest ggml_gelu_quick_f32(float(h)), with
// glibc's expf (compute.Expf) as ggml's CPU backend calls it.
var geluQuickF16 = sync.OnceValue(func() *[1 << 16]uint16 {
	t := new([1 << 16]uint16)
	for h := range t {
		v := compute.FP16ToFP32(uint16(h))
		t[h] = compute.FP32ToFP16(v * (1 / (1 + compute.Expf(-1.702*v))))
	}
	return t
})
