package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Architectures lists the architectures troupe runs.
var Architectures = []string{"llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "gemma2", "gemma3", "smollm3", "phi3", "gpt-oss", "bert", "nomic-bert", "qwen2vl", "qwen3vl"}

// ErrUnsupportedArch is wrapped when a file holds an architecture troupe
// does not run.
var ErrUnsupportedArch = fmt.Errorf("unsupported architecture (troupe runs: %s)", strings.Join(Architectures, ", "))

// Bounds far above any real model, so a corrupt header cannot ask for
// absurd allocations.
const (
	maxContext = 1 << 24
	maxWidth   = 1 << 18
)

// Config holds a model's hyperparameters.
type Config struct {
	Arch       string // "llama", "qwen2", "qwen3"
	Dim        int    // n_embd: width of the residual stream
	Layers     int    // n_layer
	Heads      int    // n_head: query heads
	KVHeads    int    // n_head_kv: key/value heads (grouped-query attention when < Heads)
	HeadDim    int    // values per head
	FFNDim     int    // n_ff: hidden width of the feed-forward block
	VocabSize  int    // n_vocab
	ContextLen int    // n_ctx_train: positions the model was trained on
	NormEps    float32

	RopeDim     int       // n_rot: leading values of each head that are rotated
	RopeBase    float32   // freq_base
	RopeScale   float32   // freq_scale: 1/factor for linear scaling, else 1
	RopeNeox    bool      // rotate-half pairing (Qwen, Hugging Face llama) instead of adjacent pairs (GGUF llama)
	RopeFactors []float32 // (RopeDim/2) per-frequency divisors (Llama 3 rope scaling), nil when unused

	QKVBias    bool // q/k/v projections have biases (qwen2)
	QKNorm     bool // per-head RMS norms on q and k before rope (qwen3)
	TiedOutput bool // the output projection is the token embedding

	Pooling Pooling // the file's pooling of embeddings (<arch>.pooling_type); PoolingNone when it has none
	Encoder bool    // a BERT-family encoder (bert.go): embeddings only, whole sequences

	// Gemma's extras (gemma.go); zero elsewhere.
	EmbedScale    float32 // token embeddings are multiplied by it (√dim); 0: not scaled
	QueryScale    float32 // q is multiplied by it before attention, whose softmax scale is then 1; 0: 1/√head_dim in the softmax
	PostNorms     bool    // RMS norms on the attention and FFN outputs before each residual add
	GeGLU         bool    // feed-forward activation gelu(gate)·up, not silu(gate)·up
	SlidingWindow int     // positions a sliding-window layer attends to, its own included
	SWALayers     []bool  // (layers) the layers that attend through the window; nil: none
	RopeBaseSWA   float32 // freq_base of the sliding-window layers
	RopeScaleSWA  float32 // freq_scale of the sliding-window layers
	AttnSoftcap   float32 // attention scores become c·tanh(s/c) (gemma2); 0: none
	FinalSoftcap  float32 // logits become c·tanh(l/c); 0: none

	NoRopeLayers []bool // (layers) layers whose q and k are not rotated (smollm3); nil: none

	// RopeSections are M-RoPE's (qwen2vl.go): how many of the rotated pairs
	// take their angle from a token's t, h, w (and a fourth, always 0)
	// position, cyclically; all zero: one position per token.
	RopeSections [4]int
	// RopeInterleaved takes the sections' positions in turn, pair by pair
	// (llama.cpp's IMROPE: qwen3vl), rather than one section after another.
	RopeInterleaved bool
	// Deepstack is how many layers take an image row's extra slices
	// (qwen3vl's n_deepstack_layers, qwen2vl.go): an input embedding then
	// has InputDim values.
	Deepstack int

	// Phi-3's extras (phi3.go); zero elsewhere.
	FusedQKV       bool    // q, k and v are one matrix (attn_qkv)
	FusedGateUp    bool    // gate and up are one matrix (ffn_up, gate rows first)
	RopeAttnFactor float32 // rope cosines and sines are multiplied by it (LongRoPE); 0: 1

	// LongRoPE's two factor sets (phi3_longrope.go); RopeFactors is one of
	// them, the short by default, as Model.SetContextLen chooses.
	RopeFactorsShort, RopeFactorsLong []float32
	RopeOrigContext                   int // longer contexts take the long factors

	// Mixture of experts (moe.go); zero for dense models.
	Experts      int  // n_expert: expert FFNs per layer
	ExpertsUsed  int  // n_expert_used: the experts (top-k) each token is routed to
	ExpertFFNDim int  // n_ff_exp: hidden width of one expert
	SharedFFNDim int  // n_ff_shexp: hidden width of the shared expert (qwen2moe); 0: none
	NormTopK     bool // the top-k routing weights are divided by their sum (qwen3moe)

	// gpt-oss's extras (gptoss.go); zero elsewhere.
	OBias       bool  // the attention output projection has a bias
	AttnSinks   bool  // each head's softmax has one more logit, a learned sink (attn_sinks)
	SoftmaxTopK bool  // the routing weights are a softmax over the top-k router logits alone
	ExpertOAI   bool  // router and experts have biases; experts use swiglu_oai
	RopeYaRN    *YaRN // YaRN rope scaling; nil when unused
}

// KVDim is the width of one token's keys (and of its values) in one layer.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// positiveFinite reports whether x is a number in (0, +Inf): NaN, zero,
// negatives and infinities are not.
func positiveFinite(x float32) bool { return x > 0 && x <= math.MaxFloat32 }

// Validate checks that the hyperparameters describe a model troupe can run.
func (c *Config) Validate() error {
	if !slices.Contains(Architectures, c.Arch) {
		return fmt.Errorf("%q: %w", c.Arch, ErrUnsupportedArch)
	}
	switch {
	case c.Dim <= 0, c.Layers <= 0, c.Heads <= 0, c.KVHeads <= 0, c.HeadDim <= 0, c.FFNDim <= 0, c.VocabSize <= 0:
		return fmt.Errorf("model: hyperparameters must be positive: dim %d, layers %d, heads %d/%d, head dim %d, ffn %d, vocab %d",
			c.Dim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFNDim, c.VocabSize)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("model: %d query heads not a multiple of %d kv heads", c.Heads, c.KVHeads)
	case c.RopeDim <= 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0:
		return fmt.Errorf("model: rope dimension %d invalid for head dim %d", c.RopeDim, c.HeadDim)
	case c.RopeFactors != nil && len(c.RopeFactors) != c.RopeDim/2:
		return fmt.Errorf("model: %d rope factors, want %d", len(c.RopeFactors), c.RopeDim/2)
	case c.ContextLen < 0 || c.ContextLen > maxContext:
		return fmt.Errorf("model: context length %d outside 0..%d", c.ContextLen, maxContext)
	case c.Dim > maxWidth || c.FFNDim > maxWidth || c.Heads*c.HeadDim > maxWidth || c.Layers > 1024:
		return fmt.Errorf("model: implausible size: dim %d, ffn %d, %d heads of %d, %d layers", c.Dim, c.FFNDim, c.Heads, c.HeadDim, c.Layers)
	case !positiveFinite(c.NormEps), !positiveFinite(c.RopeBase), !positiveFinite(c.RopeScale):
		return fmt.Errorf("model: norm eps %g, rope base %g and rope scale %g must be positive and finite", c.NormEps, c.RopeBase, c.RopeScale)
	}
	if c.NoRopeLayers != nil && len(c.NoRopeLayers) != c.Layers {
		return fmt.Errorf("model: %d no-rope layer flags for %d layers", len(c.NoRopeLayers), c.Layers)
	}
	if err := c.validateMRoPE(); err != nil {
		return err
	}
	if err := c.validateGemma(); err != nil {
		return err
	}
	if err := c.validateYaRN(); err != nil {
		return err
	}
	return c.validateMoE()
}
