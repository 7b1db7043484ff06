package vision

import (
	"math"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// reference computes a projector's vision tower and projector for one
// tile in float64, written from the models' definitions (SigLIP, then
// Gemma3MultiModalProjector, or Idefics3's pixel shuffle as clip.cpp's
// ggml reshapes and permutes spell it) rather than from encode.go.
func reference(t *testing.T, p *Projector, px *pixels) []float64 {
	hp := p.hp
	get := func(name string) []float64 { return refTensor(t, p, name) }
	d := hp.dim
	side := hp.imageSize / hp.patch
	n := side * side
	x := refPatchEmbed(px, side, d, hp.patch, get("v.patch_embd.weight"), get("v.patch_embd.bias"))
	pos := get("v.position_embd.weight")
	for i := range x {
		x[i] += pos[i]
	}
	for l := range hp.layers {
		refLayer(x, n, hp, func(s string) []float64 { return get("v.blk." + itoa(l) + "." + s) })
	}
	x = refNorm(x, n, d, get("v.post_ln.weight"), get("v.post_ln.bias"), false, hp.eps)
	if p.typ == "idefics3" {
		return referenceIdefics3(x, side, d, hp.merge, hp.projDim, get("mm.model.fc.weight"))
	}
	return refGemma3Proj(x, side, hp, get)
}

// refTensor is tensor name of p's file dequantized to float64; nil when
// the file has none.
func refTensor(t *testing.T, p *Projector, name string) []float64 {
	ts, err := p.f.Tensor(name)
	if err != nil {
		return nil
	}
	v := make([]float32, ts.Elems())
	if err := compute.Dequantize(ts.Type, ts.Data, v); err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(v))
	for i := range v {
		out[i] = float64(v[i])
	}
	return out
}

// refLinear is y[o] = sum_i w[o*in+i] x[i] + b[o] for each of n rows.
func refLinear(x []float64, n, in, out int, w, b []float64) []float64 {
	y := make([]float64, n*out)
	for t := range n {
		for o := range out {
			s := 0.0
			for i := range in {
				s += w[o*in+i] * x[t*in+i]
			}
			if b != nil {
				s += b[o]
			}
			y[t*out+o] = s
		}
	}
	return y
}

// refNorm is the layer norm (RMS norm when rms) of each of n rows of d,
// times w, plus b when not nil.
func refNorm(x []float64, n, d int, w, b []float64, rms bool, eps float32) []float64 {
	y := make([]float64, len(x))
	for t := range n {
		r := x[t*d : (t+1)*d]
		mean := 0.0
		if !rms {
			for _, v := range r {
				mean += v / float64(d)
			}
		}
		vr := 0.0
		for _, v := range r {
			vr += (v - mean) * (v - mean) / float64(d)
		}
		for i, v := range r {
			y[t*d+i] = (v - mean) / math.Sqrt(vr+float64(eps)) * w[i]
			if b != nil {
				y[t*d+i] += b[i]
			}
		}
	}
	return y
}

// refPatchEmbed is the Conv2d of kernel [out][c][ky][kx] (ps×ps, stride
// ps, bias kb) over the (3, H, W) image: side×side rows of d.
func refPatchEmbed(px *pixels, side, d, ps int, kern, kb []float64) []float64 {
	x := make([]float64, side*side*d)
	for py := range side {
		for pxx := range side {
			for o := range d {
				s := kb[o]
				for c := range 3 {
					for ky := range ps {
						for kx := range ps {
							s += kern[((o*3+c)*ps+ky)*ps+kx] * float64(px.buf[3*((py*ps+ky)*px.nx+pxx*ps+kx)+c])
						}
					}
				}
				x[(py*side+pxx)*d+o] = s
			}
		}
	}
	return x
}

// refLayer adds one SigLIP encoder layer (weights from g) to x, n rows of
// hp.dim: pre-norm attention over all rows, then a GELU feed-forward.
func refLayer(x []float64, n int, hp hparams, g func(string) []float64) {
	d := hp.dim
	h := refNorm(x, n, d, g("ln1.weight"), g("ln1.bias"), false, hp.eps)
	q := refLinear(h, n, d, d, g("attn_q.weight"), g("attn_q.bias"))
	k := refLinear(h, n, d, d, g("attn_k.weight"), g("attn_k.bias"))
	v := refLinear(h, n, d, d, g("attn_v.weight"), g("attn_v.bias"))
	a := refAttention(q, k, v, n, d, hp.heads)
	o := refLinear(a, n, d, d, g("attn_out.weight"), g("attn_out.bias"))
	for i := range x {
		x[i] += o[i]
	}
	h = refNorm(x, n, d, g("ln2.weight"), g("ln2.bias"), false, hp.eps)
	u := refLinear(h, n, d, hp.ffn, g("ffn_up.weight"), g("ffn_up.bias"))
	for i, z := range u {
		u[i] = 0.5 * z * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(z+0.044715*z*z*z)))
	}
	o = refLinear(u, n, hp.ffn, d, g("ffn_down.weight"), g("ffn_down.bias"))
	for i := range x {
		x[i] += o[i]
	}
}

// refAttention is softmax(q·kᵀ/√hd)·v for each of heads heads, every row
// attending to all n rows.
func refAttention(q, k, v []float64, n, d, heads int) []float64 {
	hd := d / heads
	a := make([]float64, n*d)
	for head := range heads {
		for i := range n {
			sc := make([]float64, n)
			mx := math.Inf(-1)
			for j := range n {
				s := 0.0
				for e := range hd {
					s += q[i*d+head*hd+e] * k[j*d+head*hd+e]
				}
				sc[j] = s / math.Sqrt(float64(hd))
				mx = max(mx, sc[j])
			}
			sum := 0.0
			for j := range sc {
				sc[j] = math.Exp(sc[j] - mx)
				sum += sc[j]
			}
			for j := range n {
				for e := range hd {
					a[i*d+head*hd+e] += sc[j] / sum * v[j*d+head*hd+e]
				}
			}
		}
	}
	return a
}

// refGemma3Proj is Gemma 3's projector of x (side×side rows of hp.dim):
// AvgPool2d over the patch grid, then RMSNorm and x · input_projection.
func refGemma3Proj(x []float64, side int, hp hparams, get func(string) []float64) []float64 {
	d, m := hp.dim, hp.merge
	os := side / m
	pooled := make([]float64, os*os*d)
	for oy := range os {
		for ox := range os {
			for c := range d {
				s := 0.0
				for ky := range m {
					for kx := range m {
						s += x[((oy*m+ky)*side+ox*m+kx)*d+c]
					}
				}
				pooled[(oy*os+ox)*d+c] = s / float64(m*m)
			}
		}
	}
	pooled = refNorm(pooled, os*os, d, get("mm.soft_emb_norm.weight"), nil, true, hp.eps)
	proj := get("mm.input_projection.weight") // (dim rows of projDim): x · W
	out := make([]float64, os*os*hp.projDim)
	for tk := range os * os {
		for j := range hp.projDim {
			s := 0.0
			for i := range d {
				s += pooled[tk*d+i] * proj[i*hp.projDim+j]
			}
			out[tk*hp.projDim+j] = s
		}
	}
	return out
}

// referenceIdefics3 is build_patch_merge_permute index by index (ggml's
// ne order: X is [d, W, H]), then the fc matrix.
func referenceIdefics3(x []float64, side, d, s, projDim int, fc []float64) []float64 {
	W, H := side, side
	// reshape [d·s, W/s, H], permute(0,2,1,3): P[c', y, xg]; cont to [d·s, H, W/s].
	pc := make([]float64, len(x))
	for xg := range W / s {
		for y := range H {
			for c := range d * s {
				pc[c+d*s*(y+H*xg)] = x[c+d*s*xg+d*W*y]
			}
		}
	}
	// view [d·s·s, H/s, W/s]: Q[c'', yg, xg]; permute(0,2,1,3), cont_2d:
	// row xg + (W/s)·yg.
	k := d * s * s
	rows := make([]float64, len(x))
	for yg := range H / s {
		for xg := range W / s {
			for c := range k {
				rows[(xg+(W/s)*yg)*k+c] = pc[c+k*(yg+(H/s)*xg)]
			}
		}
	}
	return refLinear(rows, (W/s)*(H/s), k, projDim, fc, nil)
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
