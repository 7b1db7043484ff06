package model

import (
	"fmt"
	"math"

	"github.com/troupe-llm/troupe/compute"
)

// YaRN rope scaling as llama.cpp applies it (rope.scaling.type "yarn";
// troupe reads it for gpt-oss): ggml's rope_yarn mixes, per frequency, the
// interpolated angle θ·freq_scale with the original θ by a ramp between
// two correction dimensions (ggml_rope_yarn_corr_dims of beta_fast and
// beta_slow), and multiplies cos and sin by a magnitude
// mscale = attn_factor·(1 + 0.1·ln(1/freq_scale)), where llama.cpp's context
// sets attn_factor = get_mscale(factor)/(1 + 0.1·ln factor) — about 1, but
// with its own float32 roundings, which are kept here.

// YaRN holds the parameters llama.cpp passes to ggml_rope_ext.
type YaRN struct {
	OrigCtx            int     // n_ctx_orig_yarn: rope.scaling.original_context_length
	ExtFactor          float32 // 1: the ramp's weight
	AttnFactor         float32 // llama.cpp's cparams.yarn_attn_factor
	BetaFast, BetaSlow float32 // 32 and 1 (llama.cpp's defaults; gpt-oss's GGUF has no keys for them)
}

// yarnConfig reads YaRN's keys: the factor (or the old rope.scale_linear)
// gives freq_scale (Config.RopeScale).
func yarnConfig(r *ggufKeys, c *Config) {
	if factor := r.float("rope.scaling.factor", r.float("rope.scale_linear", 0)); factor != 0 {
		c.RopeScale = float32(1 / factor)
	}
	y := &YaRN{OrigCtx: r.int("rope.scaling.original_context_length", c.ContextLen), ExtFactor: 1, BetaFast: 32, BetaSlow: 1}
	// llama_context's float32 arithmetic (compiled without FMA contraction).
	factor := 1 / c.RopeScale
	attn := float32(1)
	if factor > 1 { // get_mscale(factor, 1)
		attn = float32(float32(0.1)*compute.Logf(factor)) + 1
	}
	attn *= 1 / (1 + float32(float32(0.1)*compute.Logf(factor)))
	y.AttnFactor = attn * float32(r.float("rope.scaling.attn_factor", 1))
	c.RopeYaRN = y
}

// validateYaRN checks the YaRN parameters.
func (c *Config) validateYaRN() error {
	y := c.RopeYaRN
	if y == nil {
		return nil
	}
	if y.OrigCtx <= 0 || y.OrigCtx > maxContext || !(y.AttnFactor > 0) || !(y.BetaFast > y.BetaSlow) || !(y.BetaSlow > 0) {
		return fmt.Errorf("model: YaRN original context %d, attn factor %g, betas %g/%g invalid", y.OrigCtx, y.AttnFactor, y.BetaFast, y.BetaSlow)
	}
	return nil
}

// ropeTable writes position pos's rope table for a layer with rope base
// base and freq_scale scale: YaRN's when c has it, else the plain one.
func (c *Config) ropeTable(cs []float32, pos int, base, scale float32) {
	if c.RopeYaRN == nil {
		compute.RopeTable(cs, pos, base, scale, c.RopeFactors)
		return
	}
	yarnTable(cs, pos, base, scale, c.RopeFactors, c.RopeYaRN)
}

// yarnTable is compute.RopeTable with YaRN, ggml's ggml_rope_cache_init and
// rope_yarn (compiled with FMA contraction) bit for bit.
func yarnTable(cs []float32, pos int, base, freqScale float32, factors []float32, y *YaRN) {
	nRot := len(cs)
	thetaScale := float32(math.Pow(float64(base), float64(float32(-2)/float32(nRot))))
	low, high := yarnCorrDims(nRot, y.OrigCtx, base, y.BetaFast, y.BetaSlow)
	mscale := y.AttnFactor
	if y.ExtFactor != 0 {
		mscale *= fma32(float32(0.1), compute.Logf(1/freqScale), 1)
	}
	theta := float32(pos)
	for i := range nRot / 2 {
		extrap := theta
		if factors != nil {
			extrap /= factors[i]
		}
		interp := freqScale * extrap
		t := interp
		if y.ExtFactor != 0 {
			mix := float32(yarnRamp(low, high, 2*i) * y.ExtFactor)
			t = fma32(interp, 1-mix, float32(extrap*mix))
		}
		cs[2*i], cs[2*i+1] = compute.Cosf(t)*mscale, compute.Sinf(t)*mscale
		theta *= thetaScale
	}
}

// yarnRamp is ggml's rope_yarn_ramp: 1 below low, 0 above high, linear
// between, of dimension pair i0/2.
func yarnRamp(low, high float32, i0 int) float32 {
	y := (float32(i0/2) - low) / max(float32(0.001), high-low)
	return 1 - min(1, max(0, y))
}

// yarnCorrDims is ggml_rope_yarn_corr_dims: the dimensions where the
// rotations of beta_fast and beta_slow turns over the original context
// fall, floored and ceiled into [0, nRot-1].
func yarnCorrDims(nRot, origCtx int, base, betaFast, betaSlow float32) (float32, float32) {
	dim := func(beta float32) float32 {
		return float32(nRot) * compute.Logf(float32(origCtx)/(beta*2*float32(math.Pi))) / (2 * compute.Logf(base))
	}
	start := float32(math.Floor(float64(dim(betaFast))))
	end := float32(math.Ceil(float64(dim(betaSlow))))
	return max(0, start), min(float32(nRot-1), end)
}

// fma32 is C's fmaf: x·y + z rounded once.
func fma32(x, y, z float32) float32 { return float32(math.FMA(float64(x), float64(y), float64(z))) }
