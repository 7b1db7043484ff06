package model

import (
	"fmt"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// Phi-3 and Phi-4-mini (GGUF arch "phi3", llama.cpp's src/models/phi3.cpp)
// are llama-like blocks with:
//   - q, k and v in one matrix (attn_qkv: the q rows, then k, then v) and
//     gate and up in one (ffn_up: gate rows first, then up), which troupe
//     splits at load into views of their rows: each output row is the same
//     dot product either way;
//   - neox rope, partial (Phi-4-mini rotates 96 of 128), with LongRoPE: per
//     frequency divisors (rope_factors_short or _long) and cos/sin scaled by
//     rope.scaling.attn_factor. llama.cpp takes the long factors when its
//     context is longer than rope.scaling.original_context_length; troupe
//     loads the short ones and Model.SetContextLen chooses as llama.cpp
//     does (phi3_longrope.go; actors.Start calls it with max_model_len);
//   - q scaled by 1/√head_dim in float32 before attention (Config.QueryScale).

// phi3Config reads Phi-3's keys and tensors into c (errors stay in r).
func phi3Config(f *gguf.File, r *ggufKeys, c *Config) {
	c.RopeNeox = true
	if c.HeadDim > 0 {
		c.QueryScale = 1 / sqrtf(float32(c.HeadDim))
	}
	c.RopeAttnFactor = float32(r.float("rope.scaling.attn_factor", 1))
	_, err := f.Tensor("blk.0.attn_qkv.weight")
	c.FusedQKV = err == nil
	_, err = f.Tensor("blk.0.ffn_gate.weight")
	c.FusedGateUp = err != nil
	if t, err := f.Tensor("rope_factors_short.weight"); err == nil && r.err == nil {
		c.RopeFactors = make([]float32, t.Elems())
		if err := compute.Dequantize(t.Type, t.Data, c.RopeFactors); err != nil {
			r.err = fmt.Errorf("model: %s: rope_factors_short.weight: %w", f.Path, err)
		}
	}
	phi3LongRope(f, r, c)
}

// scaleRope multiplies a rope table's cosines and sines by f, as ggml's
// rope does with its attn_factor (cosf(θ)·mscale).
func scaleRope(cs []float32, f float32) {
	if f != 1 && f != 0 {
		scale(cs, f)
	}
}

// rowsOf is the view of rows [r0, r1) of the matrix t.
func rowsOf(t *compute.Tensor, r0, r1 int) *compute.Tensor {
	if t == nil {
		return nil
	}
	rb := t.RowBytes()
	return &compute.Tensor{Name: fmt.Sprintf("%s[%d:%d]", t.Name, r0, r1), Type: t.Type,
		Shape: []int{t.Cols(), r1 - r0}, Data: t.Data[r0*rb : r1*rb]}
}

// loadFused reads layer p's fused q/k/v and gate/up matrices (whichever
// c marks fused) as views of their rows.
func (l *loader) loadFused(lw *LayerWeights, p string, c *Config) {
	qDim, kvDim := c.Heads*c.HeadDim, c.KVDim()
	if c.FusedQKV {
		qkv := l.matrix(p+"attn_qkv.weight", c.Dim, qDim+2*kvDim)
		lw.Q, lw.K, lw.V = rowsOf(qkv, 0, qDim), rowsOf(qkv, qDim, qDim+kvDim), rowsOf(qkv, qDim+kvDim, qDim+2*kvDim)
	}
	if c.FusedGateUp {
		gu := l.matrix(p+"ffn_up.weight", c.Dim, 2*c.FFNDim)
		lw.Gate, lw.Up = rowsOf(gu, 0, c.FFNDim), rowsOf(gu, c.FFNDim, 2*c.FFNDim)
	}
}
