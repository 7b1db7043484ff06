package vision

import (
	"math"

	"github.com/troupe-llm/troupe/compute"
)

// Qwen3-VL (clip.cpp's clip_graph_qwen3vl, PROJECTOR_TYPE_QWEN3VL): the
// image prepared as Qwen2.5-VL's (prepareQwen), a ViT with the Conv3D
// patch embedding and its bias, learned positions interpolated to the
// image's patch grid, layer norms, fused q/k/v, 2-D rope and full
// attention in every layer, a GELU feed-forward; the 2×2 merger after the
// post norm, and a deepstack merger (its own norm over the 4·dim values,
// fc1, GELU, fc2) on the output of each deepstack layer. Each row is the
// merger's projDim values, then each deepstack layer's, in layer order.

// encodeQwen3 is clip_graph_qwen3vl::build for one image: (rows,
// projDim·(1+deepstack)) values, rows row-major over the merged grid.
func (p *Projector) encodeQwen3(mm *compute.MatMuler, px *pixels) ([]float32, error) {
	hp, w := &p.hp, p.w
	x, lay, err := p.qwenInput(mm, px, 0) // one window: 2×2 groups row by row
	if err != nil {
		return nil, err
	}
	n, d := len(lay.patch), hp.dim
	m := n / 4
	sc := newQwenScratch(mm, n, d, hp.heads, hp.ffn, lay, false)
	sc.qkv = make([]float32, n*3*d) // (patches, 3·dim)
	var deep [][]float32            // (rows, projDim) per deepstack layer, graph order
	for li := range w.layers {
		lw := &w.layers[li]
		if err := p.qwen3Layer(mm, lw, x, sc); err != nil {
			return nil, err
		}
		if lw.dsFC1 != nil {
			out, err := p.merge(mm, x, m, lw.dsNormW, lw.dsNormB, lw.dsFC1, lw.dsFC1b, lw.dsFC2, lw.dsFC2b)
			if err != nil {
				return nil, err
			}
			deep = append(deep, out)
		}
	}
	if w.postW != nil {
		normRows(mm, x, x, d, w.postW, w.postB, hp.eps)
	}
	merged, err := p.merge(mm, x, m, nil, nil, w.mm0, w.mm0b, w.mm2, w.mm2b)
	if err != nil {
		return nil, err
	}

	// Rows in raster order, each the merger's values then the deepstack ones.
	pd := hp.projDim
	width := pd * (1 + len(deep))
	out := make([]float32, m*width)
	parallelRows(mm, m, func(lo, hi int) {
		for src := lo; src < hi; src++ {
			dst, row := lay.unit[src], out[src*width:(src+1)*width]
			copy(row[:pd], merged[dst*pd:(dst+1)*pd])
			for j, ds := range deep {
				copy(row[(j+1)*pd:(j+2)*pd], ds[dst*pd:(dst+1)*pd])
			}
		}
	})
	return out, nil
}

// qwen3Layer is one Qwen3-VL ViT layer on the residual stream x: layer
// norm, the fused q, k, v with its bias and 2-D rope, attention over all
// patches, the output projection; layer norm and the GELU feed-forward.
func (p *Projector) qwen3Layer(mm *compute.MatMuler, lw *layerWeights, x []float32, sc *qwenScratch) error {
	hp := &p.hp
	d, n, cur, qkv := hp.dim, sc.n, sc.cur, sc.qkv
	normRows(mm, cur, x, d, lw.ln1w, lw.ln1b, hp.eps)
	if err := linearAdd(mm, qkv, cur, n, lw.qkv, lw.qkvb, nil); err != nil {
		return err
	}
	parallelRows(mm, n, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			r := qkv[t*3*d:]
			copy(sc.q[t*d:(t+1)*d], r[:d])
			copy(sc.kk[t*d:(t+1)*d], r[d:2*d])
			copy(sc.v[t*d:(t+1)*d], r[2*d:3*d])
			sc.ropeQK(t, d, hp.heads)
		}
	})
	if err := sc.attend(mm, lw, x, hp.heads, nil); err != nil {
		return err
	}

	normRows(mm, cur, x, d, lw.ln2w, lw.ln2b, hp.eps)
	return p.plainFFN(mm, lw, x, sc)
}

// merge is a Qwen-VL merger over x (4·m patches of dim values, each four
// consecutive ones a 2×2 group): each group one row of 4·dim values,
// layer-normed by normW, normB when normW is not nil, then fc1 with b1,
// GELU, fc2 with b2 ((m, projDim) values).
func (p *Projector) merge(mm *compute.MatMuler, x []float32, m int, normW, normB []float32, fc1 *compute.Tensor, b1 []float32, fc2 *compute.Tensor, b2 []float32) ([]float32, error) {
	k := 4 * p.hp.dim
	in := x
	if normW != nil {
		in = make([]float32, m*k)
		normRows(mm, in, x[:m*k], k, normW, normB, p.hp.eps)
	}
	hid := make([]float32, m*k) // (rows, 4·dim)
	if err := linearAdd(mm, hid, in, m, fc1, b1, nil); err != nil {
		return nil, err
	}
	parallelRows(mm, m, func(lo, hi int) { gelu(hid[lo*k : hi*k]) })
	out := make([]float32, m*p.hp.projDim)
	if err := linearAdd(mm, out, hid, m, fc2, b2, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// interpolatePositions is clip.cpp's resize_position_embeddings with
// GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ALIGN_CORNERS (ggml's CPU
// upscale): the side×side table of dim-value rows (raster order) resized
// to nx×ny, the corners kept; the table itself when the sizes agree. The
// rows of the grid split over mm's crew.
func interpolatePositions(mm *compute.MatMuler, table []float32, side, dim, nx, ny int) []float32 {
	if nx == side && ny == side {
		return table
	}
	scale := func(dst, src int) float32 {
		if dst > 1 && src > 1 {
			return float32(dst-1) / float32(src-1)
		}
		return float32(dst) / float32(src)
	}
	sf0, sf1 := scale(nx, side), scale(ny, side)
	// coord is destination index i's two source indices and the weight of
	// the second, for scale factor sf.
	coord := func(i int, sf float32) (lo, hi int, frac float32) {
		v := float32(i) / sf
		lo = int(math.Floor(float64(v)))
		hi = max(0, min(lo+1, side-1))
		lo = max(0, min(lo, side-1))
		return lo, hi, max(0, min(v-float32(lo), 1))
	}
	out := make([]float32, nx*ny*dim)
	parallelRows(mm, ny, func(lo, hi int) {
		for i1 := lo; i1 < hi; i1++ {
			interpolateRow(out, table, side, dim, nx, i1, sf0, sf1, coord)
		}
	})
	return out
}

// interpolateRow is interpolatePositions' row i1 of out (nx rows of dim
// values), for the scale factors sf0, sf1 and their coord.
func interpolateRow(out, table []float32, side, dim, nx, i1 int, sf0, sf1 float32, coord func(int, float32) (int, int, float32)) {
	y0, y1, dy := coord(i1, sf1)
	for i0 := range nx {
		x0, x1, dx := coord(i0, sf0)
		dst := out[(i1*nx+i0)*dim : (i1*nx+i0+1)*dim]
		a, b := table[(y0*side+x0)*dim:], table[(y0*side+x1)*dim:]
		c, e := table[(y1*side+x0)*dim:], table[(y1*side+x1)*dim:]
		for ch := range dim { // ggml's products left to right; explicit conversions: no fused multiply-add
			va := float32(float32(a[ch]*float32(1-dx)) * float32(1-dy))
			vb := float32(float32(b[ch]*dx) * float32(1-dy))
			vc := float32(float32(c[ch]*float32(1-dx)) * dy)
			vd := float32(float32(e[ch]*dx) * dy)
			dst[ch] = float32(float32(va+vb)+vc) + vd
		}
	}
}
