package model

import (
	"fmt"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// LongRoPE (Phi-3.5-mini, Phi-4-mini) has two sets of per-frequency rope
// divisors: rope_factors_short for contexts up to
// rope.scaling.original_context_length and rope_factors_long beyond it.
// llama.cpp chooses once per context (llama_model::get_rope_factors): the
// long set when n_ctx_seq, the positions one sequence may use, exceeds that
// length (n_ctx_orig_yarn, the training context when the key is absent),
// else the short one; a missing set means no divisors. troupe loads the
// short set and Model.SetContextLen makes the same choice for a serving
// context, so the logits of every position depend on the context as
// llama.cpp's do (a model served with 128K positions rotates even its
// first tokens with the long factors).

// phi3LongRope keeps both factor sets and the original context in c
// (errors stay in r). phi3Config has put the short set in c.RopeFactors.
func phi3LongRope(f *gguf.File, r *ggufKeys, c *Config) {
	if _, err := f.Tensor("rope_freqs.weight"); err == nil {
		return // llama.cpp takes rope_freqs over both sets
	}
	c.RopeFactorsShort = c.RopeFactors
	c.RopeOrigContext = r.int("rope.scaling.original_context_length", c.ContextLen)
	t, err := f.Tensor("rope_factors_long.weight")
	if err != nil || r.err != nil {
		return
	}
	c.RopeFactorsLong = make([]float32, t.Elems())
	if err := compute.Dequantize(t.Type, t.Data, c.RopeFactorsLong); err != nil {
		r.err = fmt.Errorf("model: %s: rope_factors_long.weight: %w", f.Path, err)
		return
	}
	for _, fs := range [][]float32{c.RopeFactorsShort, c.RopeFactorsLong} {
		if fs != nil && len(fs) != c.RopeDim/2 {
			r.err = fmt.Errorf("model: %s: %d LongRoPE factors, want %d (rope dimension %d / 2)", f.Path, len(fs), c.RopeDim/2, c.RopeDim)
			return
		}
	}
}

// SetContextLen tells the model how many positions one sequence may use
// (a server's max_model_len, llama.cpp's n_ctx_seq); a LongRoPE model takes
// its long rope factors when n exceeds its original context, its short ones
// otherwise, as llama.cpp does. Other models ignore it. Call it before
// Forward, never while one runs: it changes Config.RopeFactors.
func (m *Model) SetContextLen(n int) {
	c := &m.Config
	if c.RopeFactorsShort == nil && c.RopeFactorsLong == nil {
		return
	}
	if n > c.RopeOrigContext {
		c.RopeFactors = c.RopeFactorsLong
	} else {
		c.RopeFactors = c.RopeFactorsShort
	}
}
