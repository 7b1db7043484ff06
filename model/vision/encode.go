package vision

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
)

// Encode runs the vision tower and the projector over prep's tiles and
// returns prep.Rows() rows of p.Dim() values, in the order of prep.Chunks'
// embedding runs. It follows clip.cpp's graph (build_vit, then the
// projector's own part) with ggml's CPU arithmetic where troupe's kernels
// have it; see ARCHITECTURE.md for where it is not bit-exact.
func (p *Projector) Encode(mm *compute.MatMuler, prep *Prepared) ([]float32, error) {
	if prep == nil || len(prep.tiles) == 0 {
		return nil, errors.New("vision: Encode: nothing prepared")
	}
	out := make([]float32, 0, prep.Rows()*p.Dim())
	for i := range prep.tiles {
		emb, err := p.encodeTile(mm, &prep.tiles[i])
		if err != nil {
			return nil, fmt.Errorf("vision: encode: %w", err)
		}
		out = append(out, emb...)
	}
	if len(out) != prep.Rows()*p.Dim() {
		return nil, fmt.Errorf("vision: encode: %d values for %d rows of %d", len(out), prep.Rows(), p.Dim())
	}
	return out, nil
}

// encodeTile is one clip_image_encode: (tokens, projDim) values.
func (p *Projector) encodeTile(mm *compute.MatMuler, px *pixels) ([]float32, error) {
	hp, w := &p.hp, p.w
	switch p.typ { // one image of its own size (qwen.go, qwen3.go)
	case typeQwen25VL, typeQwen2VL:
		return p.encodeQwen(mm, px)
	case typeQwen3VL:
		return p.encodeQwen3(mm, px)
	}
	if px.nx != hp.imageSize || px.ny != hp.imageSize {
		return nil, fmt.Errorf("tile of %dx%d pixels, want %d", px.nx, px.ny, hp.imageSize)
	}
	x, err := p.vit(mm, px)
	if err != nil {
		return nil, err
	}
	switch p.typ {
	case "gemma3":
		side := hp.imageSize / hp.patch
		pooled := avgPool(mm, x, side, hp.dim, hp.merge) // (tokens, dim)
		n := len(pooled) / hp.dim
		rmsNormRows(mm, pooled, pooled, w.softNorm, nil, hp.dim, hp.eps)
		out := make([]float32, n*hp.projDim)
		if err := linear(mm, out, pooled, n, w.inputProj); err != nil {
			return nil, err
		}
		return out, nil
	case "idefics3":
		side := hp.imageSize / hp.patch
		shuffled := pixelShuffle(mm, x, side, hp.dim, hp.merge) // (tokens, dim·merge²)
		n := len(shuffled) / (hp.dim * hp.merge * hp.merge)
		out := make([]float32, n*hp.projDim)
		if err := linear(mm, out, shuffled, n, w.fc); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, fmt.Errorf("projector type %q cannot encode", p.typ)
}

// im2col is ggml_im2col for a convolution of stride ps over px: a row of
// 3·ps·ps values (channel, then ky, then kx) for each of the npx×npy
// patches, in raster order; the rows of patches split over mm's crew.
func im2col(mm *compute.MatMuler, px *pixels, ps int) (cols []float32, npx, npy int) {
	npx, npy = px.nx/ps, px.ny/ps
	k := 3 * ps * ps
	cols = make([]float32, npx*npy*k)
	parallelRows(mm, npy, func(lo, hi int) { im2colRows(cols, px, ps, npx, lo, hi) })
	return cols, npx, npy
}

// im2colRows is im2col's rows [lo, hi) of patches.
func im2colRows(cols []float32, px *pixels, ps, npx, lo, hi int) {
	k := 3 * ps * ps
	for py := lo; py < hi; py++ {
		for pxx := range npx {
			row := cols[(py*npx+pxx)*k:]
			i := 0
			for c := range 3 {
				for ky := range ps {
					src := px.buf[3*((py*ps+ky)*px.nx+pxx*ps):]
					for kx := range ps {
						row[i] = src[3*kx+c]
						i++
					}
				}
			}
		}
	}
}

// vit is clip.cpp's build_inp then build_vit with NORM_TYPE_NORMAL: the
// patch embedding (a convolution of stride patch, as im2col and a matrix
// product), the learned positions, the pre-norm blocks and the post norm.
// It returns (patches, dim) values.
func (p *Projector) vit(mm *compute.MatMuler, px *pixels) ([]float32, error) {
	hp, w := &p.hp, p.w
	d, ps := hp.dim, hp.patch
	cols, npx, npy := im2col(mm, px, ps)
	n := npx * npy
	x := make([]float32, n*d) // (patches, dim): the residual stream
	if err := linearAdd(mm, x, cols, n, w.patch, w.patchBias, nil); err != nil {
		return nil, err
	}
	addParallel(mm, x, w.pos, d)
	if w.preW != nil {
		normRows(mm, x, x, d, w.preW, w.preB, hp.eps)
	}

	hd := d / hp.heads
	cur := make([]float32, n*d)     // (patches, dim)
	q := make([]float32, n*d)       // (patches, dim)
	kk := make([]float32, n*d)      // (patches, dim)
	v := make([]float32, n*d)       // (patches, dim)
	attn := make([]float32, n*d)    // (patches, dim)
	up := make([]float32, n*hp.ffn) // (patches, ffn)
	a := newAttention(n, hd)
	for li := range w.layers {
		lw := &w.layers[li]
		normRows(mm, cur, x, d, lw.ln1w, lw.ln1b, hp.eps)
		for _, m := range []struct {
			dst  []float32
			w    *compute.Tensor
			bias []float32
		}{{q, lw.q, lw.qb}, {kk, lw.k, lw.kb}, {v, lw.v, lw.vb}} {
			if err := linearAdd(mm, m.dst, cur, n, m.w, m.bias, nil); err != nil {
				return nil, err
			}
		}
		if err := a.run(mm, attn, q, kk, v, hp.heads, nil); err != nil {
			return nil, err
		}
		if err := linearAdd(mm, cur, attn, n, lw.o, lw.ob, x); err != nil {
			return nil, err
		}

		normRows(mm, cur, x, d, lw.ln2w, lw.ln2b, hp.eps)
		if err := linearAdd(mm, up, cur, n, lw.up, lw.upb, nil); err != nil {
			return nil, err
		}
		parallelRows(mm, n, func(lo, hi int) { gelu(up[lo*hp.ffn : hi*hp.ffn]) })
		if err := linearAdd(mm, cur, up, n, lw.down, lw.downb, x); err != nil {
			return nil, err
		}
	}
	if w.postW != nil {
		normRows(mm, x, x, d, w.postW, w.postB, hp.eps)
	}
	return x, nil
}

// avgPool is Gemma 3's ggml_pool_2d (average, kernel = stride = k) over
// the side×side patch grid of x (patches, dim), per channel: it returns
// ((side/k)², dim) values, summed in float32 row by row as ggml does; the
// rows of the output grid split over mm's crew.
func avgPool(mm *compute.MatMuler, x []float32, side, dim, k int) []float32 {
	os := side / k
	out := make([]float32, os*os*dim)
	parallelRows(mm, os, func(lo, hi int) { avgPoolRows(out, x, side, dim, k, lo, hi) })
	return out
}

// avgPoolRows is avgPool's rows [lo, hi) of the output grid.
func avgPoolRows(out, x []float32, side, dim, k, lo, hi int) {
	os := side / k
	ka := float32(k * k)
	for oy := lo; oy < hi; oy++ {
		for ox := range os {
			dst := out[(oy*os+ox)*dim : (oy*os+ox+1)*dim]
			for c := range dim {
				var s float32
				for ky := range k {
					for kx := range k {
						s += x[((oy*k+ky)*side+ox*k+kx)*dim+c]
					}
				}
				dst[c] = s / ka
			}
		}
	}
}

// pixelShuffle is clip.cpp's build_patch_merge_permute for a square
// side×side grid of x (patches, dim) (side a multiple of s): token (gy, gx)
// of the (side/s)² is the s×s block of patches at (gy·s, gx·s), row by
// row, each patch's dim values in turn. The rows of tokens split over mm's
// crew.
func pixelShuffle(mm *compute.MatMuler, x []float32, side, dim, s int) []float32 {
	g := side / s
	out := make([]float32, g*g*s*s*dim)
	parallelRows(mm, g, func(lo, hi int) {
		o := out[lo*g*s*s*dim:]
		for gy := lo; gy < hi; gy++ {
			for gx := range g {
				for dy := range s {
					for dx := range s {
						p := (gy*s+dy)*side + gx*s + dx
						o = o[copy(o, x[p*dim:(p+1)*dim]):]
					}
				}
			}
		}
	})
	return out
}

// addRows adds bias to every row of x, the rows split over mm's crew.
func addRows(mm *compute.MatMuler, x, bias []float32) {
	d := len(bias)
	parallelRows(mm, len(x)/d, func(lo, hi int) {
		for i := lo * d; i < hi*d; i += d {
			compute.Add(x[i:i+d], bias)
		}
	})
}

// f32Matrix views rows·cols float32 values as an F32 weight matrix of
// rows rows, for MatMul's products of activations by activations.
func f32Matrix(v []float32, cols, rows int) *compute.Tensor {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*cols*rows)
	return &compute.Tensor{Type: compute.F32, Shape: []int{cols, rows}, Data: b, InPlace: true}
}

// normRows is layerNorm of every row of d values of x into dst (which may
// be x), the rows split over mm's crew.
func normRows(mm *compute.MatMuler, dst, x []float32, d int, w, b []float32, eps float32) {
	parallelRows(mm, len(x)/d, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			layerNorm(dst[t*d:(t+1)*d], x[t*d:(t+1)*d], w, b, eps)
		}
	})
}

// addParallel is compute.Add(x, y) over rows of d values, the rows split
// over mm's crew.
func addParallel(mm *compute.MatMuler, x, y []float32, d int) {
	parallelRows(mm, len(x)/d, func(lo, hi int) { compute.Add(x[lo*d:hi*d], y[lo*d:hi*d]) })
}
