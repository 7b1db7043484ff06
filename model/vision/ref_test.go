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
	f := p.f
	get := func(name string) []float64 {
		ts, err := f.Tensor(name)
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
	// linear: y[o] = sum_i w[o*in+i] x[i] + b[o]
	linear := func(x []float64, n, in, out int, w, b []float64) []float64 {
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
	norm := func(x []float64, n, d int, w, b []float64, rms bool) []float64 {
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
				y[t*d+i] = (v - mean) / math.Sqrt(vr+float64(hp.eps)) * w[i]
				if b != nil {
					y[t*d+i] += b[i]
				}
			}
		}
		return y
	}
	d, ps := hp.dim, hp.patch
	side := hp.imageSize / ps
	n := side * side
	// Conv2d over the (3, H, W) image: kernel [out][c][ky][kx].
	kern, kb := get("v.patch_embd.weight"), get("v.patch_embd.bias")
	x := make([]float64, n*d)
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
	pos := get("v.position_embd.weight")
	for i := range x {
		x[i] += pos[i]
	}
	hd := d / hp.heads
	for l := range hp.layers {
		g := func(s string) []float64 { return get("v.blk." + itoa(l) + "." + s) }
		h := norm(x, n, d, g("ln1.weight"), g("ln1.bias"), false)
		q := linear(h, n, d, d, g("attn_q.weight"), g("attn_q.bias"))
		k := linear(h, n, d, d, g("attn_k.weight"), g("attn_k.bias"))
		v := linear(h, n, d, d, g("attn_v.weight"), g("attn_v.bias"))
		a := make([]float64, n*d)
		for head := range hp.heads {
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
		o := linear(a, n, d, d, g("attn_out.weight"), g("attn_out.bias"))
		for i := range x {
			x[i] += o[i]
		}
		h = norm(x, n, d, g("ln2.weight"), g("ln2.bias"), false)
		u := linear(h, n, d, hp.ffn, g("ffn_up.weight"), g("ffn_up.bias"))
		for i, z := range u {
			u[i] = 0.5 * z * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(z+0.044715*z*z*z)))
		}
		o = linear(u, n, hp.ffn, d, g("ffn_down.weight"), g("ffn_down.bias"))
		for i := range x {
			x[i] += o[i]
		}
	}
	x = norm(x, n, d, get("v.post_ln.weight"), get("v.post_ln.bias"), false)
	if p.typ == "idefics3" {
		return referenceIdefics3(x, side, d, hp.merge, hp.projDim, get("mm.model.fc.weight"))
	}
	// AvgPool2d over the patch grid, then RMSNorm and x · input_projection.
	m := hp.merge
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
	pooled = norm(pooled, os*os, d, get("mm.soft_emb_norm.weight"), nil, true)
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
	n := (W / s) * (H / s)
	out := make([]float64, n*projDim)
	for tk := range n {
		for o := range projDim {
			sum := 0.0
			for c := range k {
				sum += fc[o*k+c] * rows[tk*k+c]
			}
			out[tk*projDim+o] = sum
		}
	}
	return out
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
