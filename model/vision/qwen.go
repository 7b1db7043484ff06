package vision

import (
	"fmt"
	"math"

	"github.com/troupe-llm/troupe/compute"
)

// Qwen2.5-VL (clip.cpp's clip_graph_qwen2vl with PROJECTOR_TYPE_QWEN25VL,
// mtmd-image.cpp's mtmd_image_preprocessor_dyn_size): the image resized
// to a multiple of two patches each way, within 8 to 4096 merged rows'
// worth of pixels, and encoded at that size by a ViT with 2-D rotary
// positions, window attention in all layers but every n_wa_pattern-th,
// and a merger of each 2×2 patches into one row.

// qwenWindow is clip.cpp's attention window side in pixels (its default
// attn_window_size: Qwen2.5-VL's files do not set clip.vision.window_size).
const qwenWindow = 112

// smartSize is img_tool::calc_size_preserved_ratio without a longest edge:
// each side rounded to a multiple of align (at least align), then scaled
// down or up, keeping the aspect ratio, into [minPixels, maxPixels], in
// float32 as the C++ does.
func smartSize(w, h, align, minPixels, maxPixels int) (int, int) {
	f := float32(align)
	round := func(x float32) int { return int(math.Round(float64(x/f))) * align }
	ceil := func(x float32) int { return int(math.Ceil(float64(x/f))) * align }
	floor := func(x float32) int { return int(math.Floor(float64(x/f))) * align }
	wb, hb := max(align, round(float32(w))), max(align, round(float32(h)))
	switch {
	case maxPixels > 0 && wb*hb > maxPixels:
		beta := float32(math.Sqrt(float64(float32(float32(h)*float32(w)) / float32(maxPixels))))
		hb = max(align, floor(float32(h)/beta))
		wb = max(align, floor(float32(w)/beta))
	case minPixels > 0 && wb*hb < minPixels:
		beta := float32(math.Sqrt(float64(float32(minPixels) / float32(float32(h)*float32(w)))))
		hb = ceil(float32(float32(h) * beta))
		wb = ceil(float32(float32(w) * beta))
	}
	return wb, hb
}

// prepareQwen is mtmd_image_preprocessor_dyn_size with Qwen2.5-VL's
// bilinear resize (letterboxed, PAD_CEIL) and mtmd.cpp's layout: the rows
// between "<|vision_start|>" and "<|vision_end|>", row-major over the
// merged grid, each at M-RoPE offsets (0, its row, its column).
func (p *Projector) prepareQwen(img *rgb, out *Prepared) {
	align := p.hp.patch * p.hp.merge
	rw, rh := smartSize(img.nx, img.ny, align, p.hp.minPixels, p.hp.maxPixels)
	out.tiles = []pixels{normalize(resizePadded(img, rw, rh, resizeBilinear), p.hp.mean, p.hp.std)}
	gx, gy := rw/align, rh/align
	out.gridX, out.gridY = gx, gy
	out.Chunks = []Chunk{{Text: "<|vision_start|>"}, {Embeds: gx * gy}, {Text: "<|vision_end|>"}}
	out.Positions = make([][3]int32, 0, gx*gy)
	for y := range gy {
		for x := range gx {
			out.Positions = append(out.Positions, [3]int32{0, int32(y), int32(x)})
		}
	}
}

// qwenLayout is the order clip.cpp's graph keeps a Qwen2.5-VL image's
// patches in: 2×2 groups (the rows the merger joins), the groups of each
// attention window together, windows row by row.
type qwenLayout struct {
	patch  []int      // (patches) the raster index of each patch, in graph order
	pos    [][2]int32 // (patches) each patch's (y, x) in patches: its 2-D rope position
	window [][2]int   // (patches) the graph rows [lo, hi) of each patch's window
	unit   []int      // (groups) unit[raster index of a merged row] = its graph index (window_idx)
}

// newQwenLayout is clip.cpp's window_idx/inv_window_idx and position
// tables for a grid of npx×npy patches; windows of side grid merged rows
// (all one window when grid is 0).
func newQwenLayout(npx, npy, grid int) *qwenLayout {
	pw, ph := npx/2, npy/2
	if grid <= 0 {
		grid = max(pw, ph)
	}
	l := &qwenLayout{unit: make([]int, pw*ph)}
	dst := 0
	for y := 0; y < ph; y += grid {
		for x := 0; x < pw; x += grid {
			wh, ww := min(grid, ph-y), min(grid, pw-x)
			lo := 4 * dst
			for dy := range wh {
				for dx := range ww {
					uy, ux := y+dy, x+dx
					l.unit[uy*pw+ux] = dst
					dst++
					for k := range 4 {
						py, px := 2*uy+k/2, 2*ux+k%2
						l.patch = append(l.patch, py*npx+px)
						l.pos = append(l.pos, [2]int32{int32(py), int32(px)})
					}
				}
			}
			for range 4 * wh * ww {
				l.window = append(l.window, [2]int{lo, 4 * dst})
			}
		}
	}
	return l
}

// encodeQwen is clip_graph_qwen2vl::build for one Qwen2.5-VL or Qwen2-VL
// image: (rows, projDim) values, rows row-major over the merged grid.
func (p *Projector) encodeQwen(mm *compute.MatMuler, px *pixels) ([]float32, error) {
	hp, w := &p.hp, p.w
	grid := 0 // one window: 2×2 groups row by row (Qwen2-VL's)
	if hp.waPattern > 0 {
		grid = qwenWindow / hp.patch / 2
	}
	x, lay, err := p.qwenInput(mm, px, grid)
	if err != nil {
		return nil, err
	}
	n, d := len(lay.patch), hp.dim
	sc := newQwenScratch(mm, n, d, hp.heads, hp.ffn, lay, p.typ == typeQwen25VL)
	for li := range w.layers {
		full := hp.waPattern <= 0 || (li+1)%hp.waPattern == 0
		var win [][2]int
		if !full {
			win = lay.window
		}
		if err := p.qwenLayer(mm, &w.layers[li], x, sc, win); err != nil {
			return nil, err
		}
	}
	if w.postW != nil {
		p.qwenNorm(mm, x, x, w.postW, w.postB)
	}
	return p.qwenMerger(mm, x, n, lay)
}

// qwenNorm is a Qwen-VL ViT's norm on each row of x into dst (which may be
// x): Qwen2.5-VL's RMS norm (NORM_TYPE_RMS), Qwen2-VL's and Qwen3-VL's layer
// norm (NORM_TYPE_NORMAL).
func (p *Projector) qwenNorm(mm *compute.MatMuler, dst, x, w, b []float32) {
	if p.typ == typeQwen25VL {
		rmsNormRows(mm, dst, x, w, b, p.hp.dim, p.hp.eps)
		return
	}
	normRows(mm, dst, x, p.hp.dim, w, b, p.hp.eps)
}

// qwenInput is the Qwen-VL encoders' input, shared by Qwen2-VL, Qwen2.5-VL
// and Qwen3-VL: the two temporal slices of the Conv3D patch embedding,
// each ggml_conv_2d (im2col and an F16 product), added; for Qwen3-VL (w.pos
// set) the embedding's bias and the learned positions interpolated to the
// image's patch grid; the patches in graph order (newQwenLayout with
// windows of side grid merged rows), pre-normed. It returns the residual
// stream (patches, dim) and the layout.
func (p *Projector) qwenInput(mm *compute.MatMuler, px *pixels, grid int) ([]float32, *qwenLayout, error) {
	hp, w := &p.hp, p.w
	d, ps := hp.dim, hp.patch
	if px.nx%(2*ps) != 0 || px.ny%(2*ps) != 0 {
		return nil, nil, fmt.Errorf("image of %dx%d pixels: not a multiple of %d", px.nx, px.ny, 2*ps)
	}
	cols, npx, npy := im2col(mm, px, ps) // (patches, 3·patch·patch), raster order
	n := npx * npy
	raster := make([]float32, n*d) // (patches, dim)
	second := make([]float32, n*d)
	if err := linear(mm, raster, cols, n, w.patch); err != nil {
		return nil, nil, err
	}
	if err := linearAdd(mm, second, cols, n, w.patch1, nil, raster); err != nil {
		return nil, nil, err
	}
	if w.pos != nil {
		pos := interpolatePositions(mm, w.pos, hp.imageSize/ps, d, npx, npy) // (patches, dim), raster order
		parallelRows(mm, n, func(lo, hi int) {
			for i := lo * d; i < hi*d; i += d {
				if w.patchBias != nil {
					compute.Add(raster[i:i+d], w.patchBias)
				}
				compute.Add(raster[i:i+d], pos[i:i+d])
			}
		})
	}
	lay := newQwenLayout(npx, npy, grid)
	x := second // (patches, dim): the residual stream, graph order
	parallelRows(mm, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			src := lay.patch[i]
			copy(x[i*d:(i+1)*d], raster[src*d:(src+1)*d])
		}
	})
	if w.preW != nil {
		p.qwenNorm(mm, x, x, w.preW, w.preB)
	}
	return x, lay, nil
}

// qwenScratch is a Qwen-VL encoder's buffers for one image of n patches,
// and each patch's rope cosines and sines (head_dim values, graph order).
type qwenScratch struct {
	n, hd               int
	rope                []float32 // (patches, head_dim)
	cur, q, kk, v, attn []float32 // (patches, dim)
	gate, up            []float32 // (patches, ffn)
	qkv                 []float32 // (patches, 3·dim): Qwen3-VL's fused projection
	a                   *attention
}

// newQwenScratch makes the buffers (gate only for a gated feed-forward,
// Qwen2.5-VL's) and the rope table, its rows split over mm's crew.
func newQwenScratch(mm *compute.MatMuler, n, d, heads, ffn int, lay *qwenLayout, gated bool) *qwenScratch {
	hd := d / heads
	s := &qwenScratch{n: n, hd: hd, rope: make([]float32, n*hd),
		cur: make([]float32, n*d), q: make([]float32, n*d), kk: make([]float32, n*d), v: make([]float32, n*d),
		attn: make([]float32, n*d), up: make([]float32, n*ffn), a: newAttention(n, hd)}
	if gated {
		s.gate = make([]float32, n*ffn)
	}
	thetaScale := float32(math.Pow(10000, float64(float32(-2)/float32(hd/2))))
	parallelRows(mm, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			visionRope(s.rope[i*hd:(i+1)*hd], lay.pos[i][0], lay.pos[i][1], thetaScale)
		}
	})
	return s
}

// ropeQK rotates each head of the queries and keys of patch t.
func (s *qwenScratch) ropeQK(t, d, heads int) {
	cs, hd := s.rope[t*s.hd:(t+1)*s.hd], s.hd
	for h := range heads {
		compute.RopeApply(s.q[t*d+h*hd:t*d+(h+1)*hd], cs, true)
		compute.RopeApply(s.kk[t*d+h*hd:t*d+(h+1)*hd], cs, true)
	}
}

// qwenLayer is one Qwen2.5-VL or Qwen2-VL ViT layer on the residual
// stream x: norm (qwenNorm), q, k, v with biases and 2-D rope, attention
// within win (nil: all patches), the output projection; norm and the
// feed-forward: Qwen2.5-VL's gated SiLU, Qwen2-VL's without a gate
// (plainFFN).
func (p *Projector) qwenLayer(mm *compute.MatMuler, lw *layerWeights, x []float32, sc *qwenScratch, win [][2]int) error {
	hp := &p.hp
	p.qwenNorm(mm, sc.cur, x, lw.ln1w, lw.ln1b)
	if err := sc.qkvRope(mm, lw, hp.heads); err != nil {
		return err
	}
	if err := sc.attend(mm, lw, x, hp.heads, win); err != nil {
		return err
	}
	p.qwenNorm(mm, sc.cur, x, lw.ln2w, lw.ln2b)
	if lw.gate == nil {
		return p.plainFFN(mm, lw, x, sc)
	}
	if err := linearAdd(mm, sc.gate, sc.cur, sc.n, lw.gate, lw.gateb, nil); err != nil {
		return err
	}
	if err := linearAdd(mm, sc.up, sc.cur, sc.n, lw.up, lw.upb, nil); err != nil {
		return err
	}
	siluRows(mm, sc.up, sc.gate, hp.ffn)
	return sc.down(mm, lw, x)
}

// qkvRope sets the scratch's queries, keys and values from its current
// rows (cur: the layer's first norm's output) by a layer's separate q, k
// and v projections with their biases, and rotates the queries and keys.
func (s *qwenScratch) qkvRope(mm *compute.MatMuler, lw *layerWeights, heads int) error {
	n, d := s.n, len(s.cur)/s.n
	for _, m := range []struct {
		dst  []float32
		w    *compute.Tensor
		bias []float32
	}{{s.q, lw.q, lw.qb}, {s.kk, lw.k, lw.kb}, {s.v, lw.v, lw.vb}} {
		if err := linearAdd(mm, m.dst, s.cur, n, m.w, m.bias, nil); err != nil {
			return err
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
// (cur: the layer's second norm's output), added to the residual stream x:
// up with its bias, the file's activation (hp.ffnOp: GELU, Qwen3-VL's, or
// quick GELU, Qwen2-VL's), down with its bias.
func (p *Projector) plainFFN(mm *compute.MatMuler, lw *layerWeights, x []float32, sc *qwenScratch) error {
	ffn, up := p.hp.ffn, sc.up
	if err := linearAdd(mm, up, sc.cur, sc.n, lw.up, lw.upb, nil); err != nil {
		return err
	}
	act := gelu
	if p.hp.ffnOp == "gelu_quick" {
		act = geluQuick
	}
	parallelRows(mm, sc.n, func(lo, hi int) { act(up[lo*ffn : hi*ffn]) })
	return sc.down(mm, lw, x)
}

// siluRows sets up to SiLU(gate)·up, each row of ffn values by itself (as
// llama.cpp's swiglu), so that a row's bits do not depend on how the rows
// are split over mm's crew: compute.SiLUMul's last len mod 16 values take
// the scalar expf, its others the vector one.
func siluRows(mm *compute.MatMuler, up, gate []float32, ffn int) {
	parallelRows(mm, len(up)/ffn, func(lo, hi int) {
		for i := lo * ffn; i < hi*ffn; i += ffn {
			compute.SiLUMul(up[i:i+ffn], gate[i:i+ffn], up[i:i+ffn])
		}
	})
}

// attend is a layer's attention after q, k and v: attention over heads
// within win (nil: all patches), the output projection with its bias,
// added to the residual stream x.
func (s *qwenScratch) attend(mm *compute.MatMuler, lw *layerWeights, x []float32, heads int, win [][2]int) error {
	if err := s.a.run(mm, s.attn, s.q, s.kk, s.v, heads, win); err != nil {
		return err
	}
	return linearAdd(mm, s.cur, s.attn, s.n, lw.o, lw.ob, x)
}

// down is a layer's feed-forward output: the down projection of up with
// its bias, added to the residual stream x.
func (s *qwenScratch) down(mm *compute.MatMuler, lw *layerWeights, x []float32) error {
	return linearAdd(mm, s.cur, s.up, s.n, lw.down, lw.downb, x)
}

// qwenMerger is Qwen2.5-VL's merger: each four consecutive patches of x
// (n patches, graph order) one row of 4·dim values, mm.0, GELU, mm.2;
// the rows returned in raster order.
func (p *Projector) qwenMerger(mm *compute.MatMuler, x []float32, n int, lay *qwenLayout) ([]float32, error) {
	hp, w, d := &p.hp, p.w, p.hp.dim
	m := n / 4
	hid := make([]float32, m*4*d) // (rows, 4·dim)
	if err := linearAdd(mm, hid, x, m, w.mm0, w.mm0b, nil); err != nil {
		return nil, err
	}
	parallelRows(mm, m, func(lo, hi int) { gelu(hid[lo*4*d : hi*4*d]) })
	merged := make([]float32, m*hp.projDim) // (rows, projDim), graph order
	if err := linearAdd(mm, merged, hid, m, w.mm2, w.mm2b, nil); err != nil {
		return nil, err
	}
	out := make([]float32, m*hp.projDim) // raster order
	pd := hp.projDim
	parallelRows(mm, m, func(lo, hi int) {
		for src := lo; src < hi; src++ {
			dst := lay.unit[src]
			copy(out[src*pd:(src+1)*pd], merged[dst*pd:(dst+1)*pd])
		}
	})
	return out, nil
}

// rmsNormRows is ggml_rms_norm, then ggml_mul by w and ggml_add of b (b
// may be nil), on each row of d values of x, the rows split over mm's crew.
func rmsNormRows(mm *compute.MatMuler, dst, x, w, b []float32, d int, eps float32) {
	parallelRows(mm, len(x)/d, func(lo, hi int) {
		for t := lo * d; t < hi*d; t += d {
			compute.RMSNorm(dst[t:t+d], x[t:t+d], w, eps)
			if b != nil {
				compute.Add(dst[t:t+d], b)
			}
		}
	})
}

// visionRope is ggml_rope_multi's cache in GGML_ROPE_TYPE_VISION mode
// with four sections of head_dim/4 (clip.cpp's mrope_sections): the first
// half of the head's len(cs)/2 rotated pairs at angles from y, the second
// from x, each restarting from its position and multiplied by thetaScale
// at every pair, as ggml_mrope_cache_init's independent sections do.
func visionRope(cs []float32, y, x int32, thetaScale float32) {
	half := len(cs) / 2
	var theta float32
	for k := range half {
		switch k {
		case 0:
			theta = float32(y)
		case half / 2:
			theta = float32(x)
		}
		cs[2*k], cs[2*k+1] = compute.Cosf(theta), compute.Sinf(theta)
		theta *= thetaScale
	}
}
