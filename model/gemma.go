package model

import (
	"fmt"
	"math"

	"github.com/troupe-llm/troupe/compute"
)

// Gemma 2 and Gemma 3 are llama-like blocks with these differences, read
// from llama.cpp's src/models/gemma2.cpp and gemma3.cpp:
//   - the token embeddings are scaled by √dim (Config.EmbedScale);
//   - RMS norms also on the attention and FFN outputs, before each residual
//     add (Config.PostNorms; the GGUF norm weights already hold Gemma's 1+w);
//   - GeGLU (tanh gelu) in the feed-forward block (Config.GeGLU);
//   - per-head q/k norms (gemma3), neox rope;
//   - q scaled by 1/√head_dim in float32 before attention, whose softmax
//     scale is then 1 (Config.QueryScale; 1/√(dim/heads) for the 27Bs);
//   - sliding-window layers interleaved with global ones: of every
//     `sliding_window_pattern` layers (gemma3: 6, gemma2: 2) all but the last
//     attend only to the last `sliding_window` positions, and (gemma3) rope
//     them with their own base (rope.freq_base_swa, default 10000) and no
//     scaling;
//   - gemma2: attention scores and final logits soft-capped, c·tanh(x/c).

// isGemma reports whether arch is one of the Gemma architectures.
func isGemma(arch string) bool { return arch == "gemma2" || arch == "gemma3" }

// gemmaConfig reads Gemma's keys into c (errors stay in r).
func gemmaConfig(r *ggufKeys, c *Config) {
	c.EmbedScale = sqrtf(float32(c.Dim))
	c.PostNorms, c.GeGLU = true, true
	c.QKNorm = c.Arch == "gemma3"
	// 1.0f/sqrtf(n): two float32 roundings, as llama.cpp computes it. The
	// 27B models (gemma3: 62 layers, gemma2: 46) have query_pre_attn_scalar
	// = dim/heads; the others the head dim.
	big := c.Arch == "gemma3" && c.Layers == 62 || c.Arch == "gemma2" && c.Layers == 46
	if big && c.Heads > 0 {
		c.QueryScale = 1 / sqrtf(float32(c.Dim/c.Heads))
	} else if c.HeadDim > 0 {
		c.QueryScale = 1 / sqrtf(float32(c.HeadDim))
	}
	period := 2
	c.RopeBaseSWA, c.RopeScaleSWA = c.RopeBase, c.RopeScale
	switch c.Arch {
	case "gemma2":
		c.SlidingWindow = r.int("attention.sliding_window", 4096)
		c.AttnSoftcap = float32(r.float("attn_logit_softcapping", 50))
		c.FinalSoftcap = float32(r.float("final_logit_softcapping", 30))
	case "gemma3":
		period = 6
		c.SlidingWindow = r.int("attention.sliding_window", 0)
		c.RopeScaleSWA = 1
		c.RopeBaseSWA = 10000
		c.FinalSoftcap = float32(r.float("final_logit_softcapping", 0))
	}
	c.RopeBaseSWA = float32(r.float("rope.freq_base_swa", float64(c.RopeBaseSWA)))
	c.setSWAPattern(r.int("attention.sliding_window_pattern", period))
}

// setSWAPattern marks the sliding-window layers when c has a window: in
// each period of layers all but the last (llama_hparams::set_swa_pattern;
// 0 makes every layer local).
func (c *Config) setSWAPattern(period int) {
	if c.SlidingWindow > 0 && c.Layers > 0 && c.Layers <= 1024 {
		c.SWALayers = make([]bool, c.Layers)
		for l := range c.SWALayers {
			c.SWALayers[l] = period == 0 || l%period < period-1
		}
	}
}

// validateGemma checks the fields gemmaConfig sets.
func (c *Config) validateGemma() error {
	switch {
	case c.SWALayers != nil && len(c.SWALayers) != c.Layers:
		return fmt.Errorf("model: %d sliding-window layer flags for %d layers", len(c.SWALayers), c.Layers)
	case c.SWALayers != nil && c.SlidingWindow <= 0:
		return fmt.Errorf("model: sliding-window layers with a window of %d", c.SlidingWindow)
	case c.SWALayers != nil && (!positiveFinite(c.RopeBaseSWA) || !positiveFinite(c.RopeScaleSWA)):
		return fmt.Errorf("model: sliding-window rope base %g and scale %g must be positive and finite", c.RopeBaseSWA, c.RopeScaleSWA)
	case c.AttnSoftcap < 0 || c.FinalSoftcap < 0 || c.EmbedScale < 0 || c.QueryScale < 0:
		return fmt.Errorf("model: negative soft-cap or scale (%g, %g, %g, %g)", c.AttnSoftcap, c.FinalSoftcap, c.EmbedScale, c.QueryScale)
	}
	return nil
}

// window is how many positions layer l attends to, 0 for all of them.
func (c *Config) window(l int) int {
	if c.SWALayers != nil && c.SWALayers[l] {
		return c.SlidingWindow
	}
	return 0
}

// swaRope reports whether the sliding-window layers rope with their own
// table (a base or scale other than the global layers').
func (c *Config) swaRope() bool {
	return c.SWALayers != nil && (c.RopeBaseSWA != c.RopeBase || c.RopeScaleSWA != c.RopeScale)
}

// sqrtf is C's sqrtf (correctly rounded, as the float64 root rounded is).
func sqrtf(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// nextBlock is the first position of the cache block after position j's.
func nextBlock(j, blockSize int) int { return (j/blockSize + 1) * blockSize }

// scale multiplies x by f, as ggml_scale does.
func scale(x []float32, f float32) {
	for i := range x {
		x[i] *= f
	}
}

// postNorm RMS-normalizes the n rows of x in place with w (Gemma's
// post-attention and post-FFN norms); nothing when w is nil.
func postNorm(c *Config, x, w []float32, n int) {
	if w == nil {
		return
	}
	for i := range n {
		row := x[i*c.Dim : (i+1)*c.Dim]
		compute.RMSNorm(row, row, w, c.NormEps)
	}
}
