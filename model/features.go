package model

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// Features is a set of the ways a model's arithmetic departs from the plain
// llama transformer (RMSNorm, q/k/v, adjacent-pair rope, causal attention,
// SwiGLU): one bit per departure. A model's set is derived from its Config
// once at load (Config.Features, stored in Model.Features); each backend
// declares the set it implements (CPUFeatures here, the CUDA forward pass its
// own), and loading a model on a backend that lacks one of its features is
// refused by name (CheckFeatures). A family that adds a Config field adds a
// Feature for it (featureRules); no backend declares a new feature until it
// computes it, so a backend that was not taught it refuses the model instead
// of computing a different one.
type Features uint64

// The features. Each is named in featureRules, in this order.
const (
	RopeNeox        Features = 1 << iota // rotate-half rope pairing (Config.RopeNeox)
	RopeScaling                          // linear rope scaling, a freq_scale other than 1
	RopeFactors                          // per-frequency rope divisors (Llama 3 rope scaling)
	LongRoPE                             // two rope factor sets chosen by the serving context (Phi-3)
	RopeAttnFactor                       // rope cosines and sines multiplied by a factor other than 1
	RopeYaRN                             // YaRN rope tables (gpt-oss)
	NoRopeLayers                         // layers whose q and k are not rotated (smollm3)
	QKVBias                              // biases on the q, k and v projections
	QKNorm                               // per-head RMS norms on q and k
	FusedQKV                             // q, k and v stored as one matrix (split at load)
	FusedGateUp                          // gate and up stored as one matrix (split at load)
	TiedOutput                           // the output projection is the token embedding
	EmbedScale                           // token embeddings scaled (Gemma's √dim)
	QueryScale                           // q scaled before attention, softmax scale 1
	SlidingWindow                        // layers that attend through a window
	SWARope                              // sliding-window layers rope with their own base or scale
	AttnSoftcap                          // attention scores soft-capped
	FinalSoftcap                         // logits soft-capped
	AttnSinks                            // a learned sink logit per head (gpt-oss)
	OBias                                // a bias on the attention output projection
	PostNorms                            // RMS norms on the attention and FFN outputs (Gemma)
	GeGLU                                // feed-forward activation gelu(gate)·up
	MoE                                  // mixture-of-experts feed-forward
	MoESharedExpert                      // a shared expert beside the routed ones (qwen2moe)
	MoENormTopK                          // routing weights renormalized over the top k (qwen3moe)
	MoESoftmaxTopK                       // routing weights a softmax over the top-k logits (gpt-oss)
	MoEOAI                               // router and expert biases, swiglu_oai experts (gpt-oss)
	Encoder                              // a BERT-family encoder (bidirectional, embeddings only)
	MRoPE                                // multimodal rope: (t, h, w) positions per token (qwen2vl)
	IMRoPE                               // M-RoPE's sections interleaved pair by pair (qwen3vl)
	Deepstack                            // image rows' extra slices added after the first layers (qwen3vl)
)

// featureRules derives each feature from a Config, in bit order.
var featureRules = []struct {
	f    Features
	name string
	has  func(c *Config) bool
}{
	{RopeNeox, "rope-neox", func(c *Config) bool { return c.RopeNeox }},
	{RopeScaling, "rope-scaling", func(c *Config) bool { return c.RopeScale != 1 }},
	{RopeFactors, "rope-factors", func(c *Config) bool { return c.RopeFactors != nil }},
	{LongRoPE, "longrope", func(c *Config) bool {
		return c.RopeFactorsShort != nil || c.RopeFactorsLong != nil || c.RopeOrigContext != 0
	}},
	{RopeAttnFactor, "rope-attn-factor", func(c *Config) bool { return c.RopeAttnFactor != 0 && c.RopeAttnFactor != 1 }},
	{RopeYaRN, "yarn", func(c *Config) bool { return c.RopeYaRN != nil }},
	{NoRopeLayers, "no-rope-layers", func(c *Config) bool { return c.NoRopeLayers != nil }},
	{QKVBias, "qkv-bias", func(c *Config) bool { return c.QKVBias }},
	{QKNorm, "qk-norm", func(c *Config) bool { return c.QKNorm }},
	{FusedQKV, "fused-qkv", func(c *Config) bool { return c.FusedQKV }},
	{FusedGateUp, "fused-gate-up", func(c *Config) bool { return c.FusedGateUp }},
	{TiedOutput, "tied-output", func(c *Config) bool { return c.TiedOutput }},
	{EmbedScale, "embed-scale", func(c *Config) bool { return c.EmbedScale != 0 }},
	{QueryScale, "query-scale", func(c *Config) bool { return c.QueryScale != 0 }},
	{SlidingWindow, "sliding-window", func(c *Config) bool { return c.SWALayers != nil }}, // SlidingWindow is its width
	{SWARope, "swa-rope", func(c *Config) bool { return c.swaRope() }},
	{AttnSoftcap, "attn-softcap", func(c *Config) bool { return c.AttnSoftcap != 0 }},
	{FinalSoftcap, "final-softcap", func(c *Config) bool { return c.FinalSoftcap != 0 }},
	{AttnSinks, "attn-sinks", func(c *Config) bool { return c.AttnSinks }},
	{OBias, "o-bias", func(c *Config) bool { return c.OBias }},
	{PostNorms, "post-norms", func(c *Config) bool { return c.PostNorms }},
	{GeGLU, "geglu", func(c *Config) bool { return c.GeGLU }},
	{MoE, "moe", func(c *Config) bool { return c.Experts > 0 || c.ExpertsUsed > 0 || c.ExpertFFNDim > 0 }},
	{MoESharedExpert, "moe-shared-expert", func(c *Config) bool { return c.SharedFFNDim > 0 }},
	{MoENormTopK, "moe-norm-topk", func(c *Config) bool { return c.NormTopK }},
	{MoESoftmaxTopK, "moe-softmax-topk", func(c *Config) bool { return c.SoftmaxTopK }},
	{MoEOAI, "moe-oai", func(c *Config) bool { return c.ExpertOAI }},
	{Encoder, "encoder", func(c *Config) bool { return c.Encoder }},
	{MRoPE, "mrope", func(c *Config) bool { return c.RopeSections != [4]int{} }},
	{IMRoPE, "imrope", func(c *Config) bool { return c.RopeInterleaved }},
	{Deepstack, "deepstack", func(c *Config) bool { return c.Deepstack > 0 }},
}

// CPUFeatures is what the CPU forward pass (Forward, bert.go's encoder)
// implements.
const CPUFeatures = RopeNeox | RopeScaling | RopeFactors | LongRoPE | RopeAttnFactor | RopeYaRN | NoRopeLayers |
	QKVBias | QKNorm | FusedQKV | FusedGateUp | TiedOutput | EmbedScale | QueryScale |
	SlidingWindow | SWARope | AttnSoftcap | FinalSoftcap | AttnSinks | OBias | PostNorms | GeGLU |
	MoE | MoESharedExpert | MoENormTopK | MoESoftmaxTopK | MoEOAI | Encoder | MRoPE | IMRoPE | Deepstack

// ErrUnsupportedFeature is wrapped when a backend is asked to run a model
// with a feature it does not implement.
var ErrUnsupportedFeature = errors.New("unsupported model feature")

// Features derives the feature set of c.
func (c *Config) Features() Features {
	var f Features
	for _, r := range featureRules {
		if r.has(c) {
			f |= r.f
		}
	}
	return f
}

// Has reports whether every feature of g is in f.
func (f Features) Has(g Features) bool { return f&g == g }

// Names lists the features of f by name, in bit order; a bit no rule
// names is "feature-N".
func (f Features) Names() []string {
	var names []string
	for f != 0 {
		b := Features(1) << bits.TrailingZeros64(uint64(f))
		f &^= b
		name := fmt.Sprintf("feature-%d", bits.TrailingZeros64(uint64(b)))
		for _, r := range featureRules {
			if r.f == b {
				name = r.name
			}
		}
		names = append(names, name)
	}
	return names
}

// String is the names of f, comma-separated ("none" for the empty set).
func (f Features) String() string {
	if f == 0 {
		return "none"
	}
	return strings.Join(f.Names(), ", ")
}

// CheckFeatures returns nil when a backend implementing the features in
// implemented can run m, and otherwise an error naming m's features it
// lacks, wrapping ErrUnsupportedFeature. backend names the backend
// ("CPU", "CUDA").
func CheckFeatures(backend string, implemented Features, m *Model) error {
	if missing := m.Features &^ implemented; missing != 0 {
		return fmt.Errorf("%s needs %s, which the %s backend does not implement: %w", m.Config.Arch, missing, backend, ErrUnsupportedFeature)
	}
	return nil
}

// deriveFeatures stores m's feature set, derived from its Config, and
// checks that the CPU forward pass implements it; every loader calls it.
func (m *Model) deriveFeatures() error {
	m.Features = m.Config.Features()
	if err := CheckFeatures("CPU", CPUFeatures, m); err != nil {
		return fmt.Errorf("model: %s: %w", m.Path, err)
	}
	return nil
}
