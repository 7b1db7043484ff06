package model

import (
	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/kv"
)

// layer runs transformer block l over the n tokens of the batch, as named
// stages, each switching on its own features (Model.Features):
//
//	attnIn      norm, q/k/v products, q/k/v biases        (QKVBias)
//	qkTransform q/k norms, rope, query scale, KV rotations, cache write
//	                                                      (QKNorm, NoRopeLayers, SWARope, QueryScale)
//	attend      causal attention over the cache            (SlidingWindow, AttnSoftcap, AttnSinks: attendRange)
//	attnOut     output product and bias, post norm, residual (OBias, PostNorms)
//	ffn         norm, then the dense FFN or the experts   (GeGLU, PostNorms; MoE: moeFFN)
func (m *Model) layer(s *State, b *Batch, cache *kv.Cache, l, n int) error {
	nk, nv := kvRotation(&m.Config, cache.Type) // a quantized cache's rotations, 0: none
	if err := m.attnIn(s, l, n); err != nil {
		return err
	}
	m.qkTransform(s, cache, l, n, nk, nv)
	m.attend(s, b, cache, l, n, nv)
	if err := m.attnOut(s, l, n); err != nil {
		return err
	}
	return m.ffn(s, l, n)
}

// attnIn normalizes the residual rows into s.xb and projects them to
// s.q (n, heads*head_dim), s.k and s.v (n, kv_dim), with their biases.
func (m *Model) attnIn(s *State, l, n int) error {
	c, lw := &m.Config, &m.Weights.Layers[l]
	dim, qDim, kvDim := c.Dim, c.Heads*c.HeadDim, c.KVDim()
	for i := range n {
		compute.RMSNorm(s.xb[i*dim:(i+1)*dim], s.x[i*dim:(i+1)*dim], lw.AttnNorm, c.NormEps)
	}
	if err := s.matMul(s.q, s.xb, n, lw.Q); err != nil {
		return err
	}
	if err := s.matMul(s.k, s.xb, n, lw.K); err != nil {
		return err
	}
	if err := s.matMul(s.v, s.xb, n, lw.V); err != nil {
		return err
	}
	if m.Features.Has(QKVBias) {
		for i := range n {
			compute.Add(s.q[i*qDim:(i+1)*qDim], lw.QBias)
			compute.Add(s.k[i*kvDim:(i+1)*kvDim], lw.KBias)
			compute.Add(s.v[i*kvDim:(i+1)*kvDim], lw.VBias)
		}
	}
	return nil
}

// qkTransform turns each token's q and k into what attention reads, head
// by head: q/k norms, rope (the sliding-window layers' own table where they
// have one; none on a no-rope layer), the query scale; then a quantized
// cache's rotations of q, k and v (nk, nv: kvRotation), and writes k and v
// into the token's cache slot.
func (m *Model) qkTransform(s *State, cache *kv.Cache, l, n, nk, nv int) {
	c, lw, f := &m.Config, &m.Weights.Layers[l], m.Features
	qDim, kvDim, hd := c.Heads*c.HeadDim, c.KVDim(), c.HeadDim
	rope := !f.Has(NoRopeLayers) || !c.NoRopeLayers[l]
	swaRope := f.Has(SWARope) && c.window(l) > 0
	for i := range n {
		q, k, v := s.q[i*qDim:(i+1)*qDim], s.k[i*kvDim:(i+1)*kvDim], s.v[i*kvDim:(i+1)*kvDim]
		cs := s.rope[i*c.RopeDim : (i+1)*c.RopeDim] // (rope_dim) this position's cos/sin
		if swaRope {
			cs = s.ropeL[i*c.RopeDim : (i+1)*c.RopeDim]
		}
		for h := range c.Heads {
			qh := q[h*hd : (h+1)*hd]
			m.normRope(qh, lw.QNorm, cs, rope)
			if f.Has(QueryScale) {
				scale(qh, c.QueryScale)
			}
		}
		for h := range c.KVHeads {
			m.normRope(k[h*hd:(h+1)*hd], lw.KNorm, cs, rope)
		}
		if nk > 0 {
			rotate(q, nk)
			rotate(k, nk)
			rotate(v, nv)
		}
		cache.Store(l, int(s.slots[i]), k, v)
	}
}

// normRope applies a head's q or k norm (QKNorm: norm, its weights) and,
// unless rope is false, its rotation by the cos/sin table cs, in place.
func (m *Model) normRope(x, norm, cs []float32, rope bool) {
	if m.Features.Has(QKNorm) {
		compute.RMSNorm(x, x, norm, m.Config.NormEps)
	}
	if rope {
		compute.RopeApply(x, cs, m.Config.RopeNeox)
	}
}

// attend computes causal attention into s.att (n, heads*head_dim) and
// undoes a quantized cache's value rotation (nv) on it.
func (m *Model) attend(s *State, b *Batch, cache *kv.Cache, l, n, nv int) {
	m.attention(s, b, cache, l, n)
	if nv > 0 {
		rotate(s.att[:n*m.Config.Heads*m.Config.HeadDim], nv)
	}
}

// attnOut projects the attention output into s.ob (n, dim), adds its bias,
// post-norms it and adds it to the residual rows.
func (m *Model) attnOut(s *State, l, n int) error {
	c, lw := &m.Config, &m.Weights.Layers[l]
	if err := s.matMul(s.ob, s.att, n, lw.O); err != nil {
		return err
	}
	if m.Features.Has(OBias) {
		addBias(s.ob, n, lw.OBias)
	}
	if m.Features.Has(PostNorms) {
		postNorm(c, s.ob, lw.AttnPostNorm, n)
	}
	compute.Add(s.x[:n*c.Dim], s.ob[:n*c.Dim])
	return nil
}

// ffn normalizes the residual rows into s.xb and runs the layer's
// feed-forward block on them: its experts (moe.go) or the dense one.
func (m *Model) ffn(s *State, l, n int) error {
	c, lw := &m.Config, &m.Weights.Layers[l]
	for i := range n {
		compute.RMSNorm(s.xb[i*c.Dim:(i+1)*c.Dim], s.x[i*c.Dim:(i+1)*c.Dim], lw.FFNNorm, c.NormEps)
	}
	if lw.MoE != nil {
		return m.moeFFN(s, l, n)
	}
	return m.denseFFN(s, l, n)
}

// denseFFN is the dense feed-forward block: gate and up products, SwiGLU
// (or GeGLU), the down product into s.ob, post norm, residual add.
func (m *Model) denseFFN(s *State, l, n int) error {
	c, lw := &m.Config, &m.Weights.Layers[l]
	if err := s.matMul(s.gate, s.xb, n, lw.Gate); err != nil {
		return err
	}
	if err := s.matMul(s.up, s.xb, n, lw.Up); err != nil {
		return err
	}
	for i := range n { // per row: ggml's swiglu works row by row
		g, u := s.gate[i*c.FFNDim:(i+1)*c.FFNDim], s.up[i*c.FFNDim:(i+1)*c.FFNDim]
		if m.Features.Has(GeGLU) {
			compute.GeGLU(g, g, u)
		} else {
			compute.SiLUMul(g, g, u)
		}
	}
	if err := s.matMul(s.ob, s.gate, n, lw.Down); err != nil {
		return err
	}
	if m.Features.Has(PostNorms) {
		postNorm(c, s.ob, lw.FFNPostNorm, n)
	}
	compute.Add(s.x[:n*c.Dim], s.ob[:n*c.Dim])
	return nil
}
