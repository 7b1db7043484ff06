package model

import (
	"math"

	"github.com/troupe-llm/troupe/compute"
)

// gpt-oss (GGUF arch "gpt-oss", llama.cpp's LLM_ARCH_OPENAI_MOE,
// src/models/openai-moe.cpp) is a mixture-of-experts block with:
//   - biases on q, k, v and the attention output (Config.QKVBias, OBias);
//   - a learned sink logit per query head (attn_sinks) that joins each
//     softmax as one more term of the denominator, with no value: ggml's
//     flash attention adds it after the positions (attnSink);
//   - sliding-window layers alternating with global ones (the even layers
//     attend to the last attention.sliding_window positions;
//     attention.sliding_window_pattern, default 2), neox rope with YaRN
//     scaling on all of them (gptoss_rope.go);
//   - the FFN norm stored as post_attention_norm;
//   - a router with a bias whose top-k logits are softmaxed among
//     themselves (LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT), and
//     experts with biases on gate, up and down and the swiglu_oai
//     activation (oaiExpert).

// Constants of swiglu_oai, as llama.cpp's build_moe_ffn passes them.
const (
	oaiAlpha = 1.702
	oaiLimit = 7.0
)

// gptossConfig reads gpt-oss's keys into c (errors stay in r).
func gptossConfig(r *ggufKeys, c *Config) {
	c.QKVBias, c.OBias, c.AttnSinks, c.SoftmaxTopK, c.ExpertOAI = true, true, true, true, true
	if typ, _ := r.f.String(r.arch + ".rope.scaling.type"); typ == "yarn" {
		yarnConfig(r, c)
	}
	c.SlidingWindow = r.int("attention.sliding_window", -1)
	c.RopeBaseSWA = float32(r.float("rope.freq_base_swa", float64(c.RopeBase)))
	c.RopeScaleSWA = c.RopeScale
	c.setSWAPattern(r.int("attention.sliding_window_pattern", 2))
}

// ffnNormName is the name of a layer's FFN norm in the file.
func ffnNormName(c *Config) string {
	if c.Arch == "gpt-oss" {
		return "post_attention_norm.weight"
	}
	return "ffn_norm.weight"
}

// gptoss loads layer p's output bias and sinks where c has them.
func (l *loader) gptoss(lw *LayerWeights, p string, c *Config) {
	if c.OBias {
		lw.OBias = l.vector(p+"attn_output.bias", c.Dim)
	}
	if c.AttnSinks {
		lw.Sinks = l.vector(p+"attn_sinks.weight", c.Heads)
	}
}

// expertBiases loads layer p's router and expert biases into w.
func (l *loader) expertBiases(w *MoEWeights, p string, c *Config) {
	w.RouterBias = l.vector(p+"ffn_gate_inp.bias", c.Experts)
	w.GateBias = l.vector(p+"ffn_gate_exps.bias", c.Experts*c.ExpertFFNDim)
	w.UpBias = l.vector(p+"ffn_up_exps.bias", c.Experts*c.ExpertFFNDim)
	w.DownBias = l.vector(p+"ffn_down_exps.bias", c.Experts*c.Dim)
}

// attnSink folds head h's sink logit s into its attention output out (the
// positions' unnormalized weighted values), whose weights sum to S with
// running max M, as ggml's flash attention does after the last position:
// where s > M the output is rescaled by e^(M−s) and the sink adds 1,
// else it adds e^(s−M). It returns the new sum S·ms + vs, rounded twice:
// GCC does not fuse this one (gpt-oss-20b-l4's prompt rows tell).
func attnSink(out []float32, S, M, s float32) float32 {
	ms, vs := float32(1), float32(1)
	if s > M {
		ms = compute.Expf(M - s)
		scale(out, ms)
	} else {
		vs = compute.Expf(s - M)
	}
	return float32(S*ms) + vs
}

// maxScaled is the running max ggml's online softmax ends with over the
// scores v: the largest v[j]·scale (−∞ for none).
func maxScaled(v []float32, sc float32) float32 {
	M := float32(math.Inf(-1))
	for _, x := range v {
		M = max(M, x*sc)
	}
	return M
}

// swigluOAI computes ggml's swiglu_oai row by row: with x = min(gate,
// limit) and y = clamp(up, −limit, limit), x/(1 + e^(−αx))·(y + 1), into
// gate.
func swigluOAI(gate, up []float32) {
	for k, g := range gate {
		x := min(g, oaiLimit)
		y := up[k]
		if y < -oaiLimit {
			y = -oaiLimit
		} else if y > oaiLimit {
			y = oaiLimit
		}
		glu := x / (1 + compute.Expf(float32(oaiAlpha)*-x))
		gate[k] = glu * (y + 1)
	}
}

// oaiExpert is swiglu for gpt-oss's expert e: the gate and up products
// plus their biases, swiglu_oai, the down product plus its bias, over the
// rows of b.xg into b.yg.
func oaiExpert(mm *compute.MatMuler, b *expertBuf, rows int, c *Config, w *MoEWeights, e int) error {
	ff, dim := c.ExpertFFNDim, c.Dim
	if err := mm.MatMul(b.gate, b.xg, rows, w.Gate[e]); err != nil {
		return err
	}
	if err := mm.MatMul(b.up, b.xg, rows, w.Up[e]); err != nil {
		return err
	}
	addBias(b.up, rows, w.UpBias[e*ff:(e+1)*ff])
	addBias(b.gate, rows, w.GateBias[e*ff:(e+1)*ff])
	swigluOAI(b.gate[:rows*ff], b.up[:rows*ff])
	if err := mm.MatMul(b.yg, b.gate, rows, w.Down[e]); err != nil {
		return err
	}
	addBias(b.yg, rows, w.DownBias[e*dim:(e+1)*dim])
	return nil
}
