package synth

import "slices"

// Shape is a real model's architecture and sizes; its weights are left to
// Write.
type Shape struct {
	Name     string
	Arch     string // "llama", "qwen2", "bert" or "nomic-bert"
	Dim      int    // embedding length
	Layers   int
	Heads    int
	KVHeads  int
	FFN      int
	Vocab    int // the real model's vocabulary size (the file gets --vocab's)
	Context  int
	RopeBase float32
	NormEps  float32
	Tied     bool // output shares token_embd
	QKVBias  bool // qwen2: biases on q, k and v

	// MRope is rope.dimension_sections (Arch "qwen2vl", "qwen3vl": M-RoPE).
	MRope [4]int
	// Deepstack is n_deepstack_layers (Arch "qwen3vl").
	Deepstack int

	// Gemma (Arch "gemma2", "gemma3"): post norms always, q/k norms in gemma3.
	HeadDim     int     // key/value length when not Dim/Heads; 0: Dim/Heads
	Window      int     // sliding_window
	SWAPattern  int     // sliding_window_pattern written when not 0 (llama.cpp's default: gemma3 6, gemma2 2)
	AttnSoftcap float32 // attn_logit_softcapping written when not 0 (gemma2's default 50)
	FinalCap    float32 // final_logit_softcapping written when not 0 (gemma2's default 30)

	// Phi-3 (Arch "phi3"): fused attn_qkv and gate/up (ffn_up) always.
	RopeDim    int     // rope.dimension_count when not the head dim (Phi-4-mini's partial rotary)
	LongRope   bool    // rope_factors_short/long tensors, rope.scaling.attn_factor and original_context_length
	AttnFactor float32 // rope.scaling.attn_factor with LongRope
	OrigCtx    int     // rope.scaling.original_context_length with LongRope; 0: 4096

	// Mixture of experts (Arch "qwen2moe", "qwen3moe"; moe.go).
	Experts     int // expert_count
	ExpertsUsed int // expert_used_count
	ExpertFFN   int // expert_feed_forward_length
	SharedFFN   int // expert_shared_feed_forward_length (qwen2moe)

	// gpt-oss (Arch "gpt-oss"; gptoss.go): biases, sinks, YaRN.
	YaRN float32 // rope.scaling.factor of YaRN scaling, with OrigCtx; 0: none

	// Rerank makes a reranker (Arch "bert" or "qwen3"; rank.go): rank
	// pooling and a classification head.
	Rerank bool
}

// ropeDim is the shape's rotated values per head.
func (s Shape) ropeDim() int {
	if s.RopeDim > 0 {
		return s.RopeDim
	}
	return s.headDim()
}

// headDim is the shape's values per head.
func (s Shape) headDim() int {
	if s.HeadDim > 0 {
		return s.HeadDim
	}
	return s.Dim / s.Heads
}

// Shapes are the sizes troupe can synthesise, from each model's
// config.json.
var Shapes = []Shape{
	{Name: "tinyllama-1.1b", Arch: "llama", Dim: 2048, Layers: 22, Heads: 32, KVHeads: 4, FFN: 5632,
		Vocab: 32000, Context: 2048, RopeBase: 10000, NormEps: 1e-5},
	{Name: "llama-3.2-1b", Arch: "llama", Dim: 2048, Layers: 16, Heads: 32, KVHeads: 8, FFN: 8192,
		Vocab: 128256, Context: 131072, RopeBase: 500000, NormEps: 1e-5, Tied: true},
	// qwen2.5-vl-3b is Qwen2.5-VL-3B-Instruct's language model; qwen2vl-tiny
	// is for tests (pairs with --projector qwen2.5vl-tiny --text-dim 256).
	{Name: "qwen2.5-vl-3b", Arch: "qwen2vl", Dim: 2048, Layers: 36, Heads: 16, KVHeads: 2, FFN: 11008,
		Vocab: 151936, Context: 128000, RopeBase: 1000000, NormEps: 1e-6, Tied: true, QKVBias: true, MRope: [4]int{16, 24, 24, 0}},
	{Name: "qwen2vl-tiny", Arch: "qwen2vl", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, FFN: 768,
		Vocab: 151936, Context: 4096, RopeBase: 1000000, NormEps: 1e-6, QKVBias: true, MRope: [4]int{8, 12, 12, 0}},
	// qwen3-vl-4b is Qwen3-VL-4B-Instruct's language model; qwen3vl-tiny is
	// for tests (pairs with --projector qwen3vl-tiny --text-dim 256).
	{Name: "qwen3-vl-4b", Arch: "qwen3vl", Dim: 2560, Layers: 36, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 9728,
		Vocab: 151936, Context: 262144, RopeBase: 5000000, NormEps: 1e-6, Tied: true, MRope: [4]int{24, 20, 20, 0}, Deepstack: 3},
	{Name: "qwen3vl-tiny", Arch: "qwen3vl", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 768,
		Vocab: 151936, Context: 4096, RopeBase: 5000000, NormEps: 1e-6, MRope: [4]int{12, 10, 10, 0}, Deepstack: 2},
	// qwen3vl-tiny-ds3 is qwen3vl-tiny with Qwen3-VL-4B's three deepstack
	// layers: it pairs with --projector qwen3vl --text-dim 256 (bench/vision.sh).
	{Name: "qwen3vl-tiny-ds3", Arch: "qwen3vl", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 768,
		Vocab: 151936, Context: 4096, RopeBase: 5000000, NormEps: 1e-6, MRope: [4]int{12, 10, 10, 0}, Deepstack: 3},
	{Name: "qwen2.5-0.5b", Arch: "qwen2", Dim: 896, Layers: 24, Heads: 14, KVHeads: 2, FFN: 4864,
		Vocab: 151936, Context: 32768, RopeBase: 1000000, NormEps: 1e-6, Tied: true, QKVBias: true},
	{Name: "smollm2-135m", Arch: "llama", Dim: 576, Layers: 30, Heads: 9, KVHeads: 3, FFN: 1536,
		Vocab: 49152, Context: 8192, RopeBase: 100000, NormEps: 1e-5, Tied: true},
	{Name: "smollm2-360m", Arch: "llama", Dim: 960, Layers: 32, Heads: 15, KVHeads: 5, FFN: 2560,
		Vocab: 49152, Context: 8192, RopeBase: 100000, NormEps: 1e-5, Tied: true},
	// Encoders (embeddings only; internal/synth/bert.go), with a WordPiece --vocab.
	{Name: "bge-small", Arch: "bert", Dim: 384, Layers: 12, Heads: 12, KVHeads: 12, FFN: 1536,
		Vocab: 30522, Context: 512, NormEps: 1e-12},
	{Name: "bert-tiny", Arch: "bert", Dim: 128, Layers: 2, Heads: 4, KVHeads: 4, FFN: 512,
		Vocab: 30522, Context: 128, NormEps: 1e-12},
	{Name: "nomic-embed-text", Arch: "nomic-bert", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, FFN: 3072,
		Vocab: 30522, Context: 2048, RopeBase: 1000, NormEps: 1e-12},
	{Name: "nomic-bert-tiny", Arch: "nomic-bert", Dim: 128, Layers: 2, Heads: 4, KVHeads: 4, FFN: 256,
		Vocab: 30522, Context: 128, RopeBase: 1000, NormEps: 1e-12},
	// Rerankers (rank pooling; internal/synth/rank.go): bge-reranker's
	// cross-encoder (its real vocabulary is XLM-R's SentencePiece; these take
	// a WordPiece --vocab) and Qwen3-Reranker; the -tiny ones are for tests.
	{Name: "bge-reranker-base", Arch: "bert", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, FFN: 3072,
		Vocab: 250002, Context: 512, NormEps: 1e-5, Rerank: true},
	{Name: "bge-reranker-tiny", Arch: "bert", Dim: 128, Layers: 2, Heads: 4, KVHeads: 4, FFN: 512,
		Vocab: 250002, Context: 128, NormEps: 1e-5, Rerank: true},
	{Name: "qwen3-reranker-0.6b", Arch: "qwen3", Dim: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 3072,
		Vocab: 151669, Context: 40960, RopeBase: 1000000, NormEps: 1e-6, Tied: true, Rerank: true},
	{Name: "qwen3-reranker-tiny", Arch: "qwen3", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 768,
		Vocab: 151669, Context: 2048, RopeBase: 1000000, NormEps: 1e-6, Tied: true, Rerank: true},
	{Name: "gemma3-1b", Arch: "gemma3", Dim: 1152, Layers: 26, Heads: 4, KVHeads: 1, HeadDim: 256, FFN: 6912,
		Vocab: 262144, Context: 32768, RopeBase: 1000000, NormEps: 1e-6, Tied: true, Window: 512},
	// gemma3-tiny is for tests: head dim ≠ dim/heads, grouped KV heads, a
	// window of 16 and one global layer of four.
	{Name: "gemma3-tiny", Arch: "gemma3", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 96, FFN: 768,
		Vocab: 512, Context: 2048, RopeBase: 1000000, NormEps: 1e-6, Tied: true, Window: 16, SWAPattern: 4},
	// gemma2-tiny is for tests: every other layer local (window 16), caps
	// small enough to bend random weights' scores and logits.
	{Name: "gemma2-tiny", Arch: "gemma2", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 96, FFN: 768,
		Vocab: 512, Context: 2048, RopeBase: 10000, NormEps: 1e-6, Tied: true, Window: 16,
		AttnSoftcap: 0.5, FinalCap: 0.5},
	{Name: "smollm3-3b", Arch: "smollm3", Dim: 2048, Layers: 36, Heads: 16, KVHeads: 4, FFN: 11008,
		Vocab: 128256, Context: 65536, RopeBase: 5000000, NormEps: 1e-6, Tied: true},
	{Name: "phi4-mini", Arch: "phi3", Dim: 3072, Layers: 32, Heads: 24, KVHeads: 8, HeadDim: 128, RopeDim: 96,
		FFN: 8192, Vocab: 200064, Context: 131072, RopeBase: 10000, NormEps: 1e-5, Tied: true,
		LongRope: true, AttnFactor: 1.1902381},
	{Name: "phi3.5-mini", Arch: "phi3", Dim: 3072, Layers: 32, Heads: 32, KVHeads: 32, FFN: 8192,
		Vocab: 32064, Context: 131072, RopeBase: 10000, NormEps: 1e-5, LongRope: true, AttnFactor: 1.1902381},
	// phi4-tiny is for tests: Phi-4-mini's layout (GQA, partial rotary,
	// tied output, LongRoPE) at dim 256. (llama.cpp gives special tokens of
	// a file whose general.name says "phi3" or "phi-3" attributes by their
	// text, and fails to load one whose vocabulary lacks them: give the
	// phi3.5-mini shape the phi-3 vocabulary.)
	{Name: "phi4-tiny", Arch: "phi3", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64, RopeDim: 48,
		FFN: 768, Vocab: 512, Context: 131072, RopeBase: 10000, NormEps: 1e-5, Tied: true,
		LongRope: true, AttnFactor: 1.1902381},
	// phi4-mini-l4, phi3.5-mini-l4 and smollm3-3b-l4 are those shapes'
	// first 4 layers: every real width (head dim 128 with Phi-4-mini's
	// rope on 96 of it and 3 query heads per KV head; Phi-3.5's head dim
	// 96) in a file that references can be made for on a small machine.
	{Name: "phi4-mini-l4", Arch: "phi3", Dim: 3072, Layers: 4, Heads: 24, KVHeads: 8, HeadDim: 128, RopeDim: 96,
		FFN: 8192, Vocab: 200064, Context: 131072, RopeBase: 10000, NormEps: 1e-5, Tied: true,
		LongRope: true, AttnFactor: 1.1902381},
	{Name: "phi3.5-mini-l4", Arch: "phi3", Dim: 3072, Layers: 4, Heads: 32, KVHeads: 32, FFN: 8192,
		Vocab: 32064, Context: 131072, RopeBase: 10000, NormEps: 1e-5, LongRope: true, AttnFactor: 1.1902381},
	{Name: "smollm3-3b-l4", Arch: "smollm3", Dim: 2048, Layers: 4, Heads: 16, KVHeads: 4, FFN: 11008,
		Vocab: 128256, Context: 65536, RopeBase: 5000000, NormEps: 1e-6, Tied: true},
	// phi4-tiny-long is phi4-tiny trained at 128 positions, so a context
	// of more (llama.cpp's n_ctx) takes LongRoPE's long factors.
	{Name: "phi4-tiny-long", Arch: "phi3", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64, RopeDim: 48,
		FFN: 768, Vocab: 512, Context: 131072, RopeBase: 10000, NormEps: 1e-5, Tied: true,
		LongRope: true, AttnFactor: 1.1902381, OrigCtx: 128},
	// smollm3-tiny is for tests: layer 3 of 4 without rope.
	{Name: "smollm3-tiny", Arch: "smollm3", Dim: 256, Layers: 4, Heads: 8, KVHeads: 2, FFN: 768,
		Vocab: 512, Context: 2048, RopeBase: 10000, NormEps: 1e-6, Tied: true},
	// qwen3-30b-a3b is Qwen3-30B-A3B (17.8 GB in Q4_K_M); qwen3-30b-a3b-l6
	// is it with 6 of its 48 layers, to fit in memory: the speed of a token
	// through those layers is the model's over 8.
	{Name: "qwen3-30b-a3b", Arch: "qwen3moe", Dim: 2048, Layers: 48, Heads: 32, KVHeads: 4, HeadDim: 128, FFN: 6144,
		Vocab: 151936, Context: 40960, RopeBase: 1000000, NormEps: 1e-6, Experts: 128, ExpertsUsed: 8, ExpertFFN: 768},
	{Name: "qwen3-30b-a3b-l6", Arch: "qwen3moe", Dim: 2048, Layers: 6, Heads: 32, KVHeads: 4, HeadDim: 128, FFN: 6144,
		Vocab: 151936, Context: 40960, RopeBase: 1000000, NormEps: 1e-6, Experts: 128, ExpertsUsed: 8, ExpertFFN: 768},
	// qwen3moe-tiny and qwen2moe-tiny are for tests: 8 experts, top 2
	// (qwen2moe: and a shared expert).
	{Name: "qwen3moe-tiny", Arch: "qwen3moe", Dim: 256, Layers: 4, Heads: 8, KVHeads: 2, FFN: 768,
		Vocab: 512, Context: 2048, RopeBase: 1000000, NormEps: 1e-6, Experts: 8, ExpertsUsed: 2, ExpertFFN: 256},
	// gpt-oss-20b, and its first 4 layers (gpt-oss-20b-l4) for references
	// at real widths on a small machine. The real experts are MXFP4; these
	// take --type's.
	{Name: "gpt-oss-20b", Arch: "gpt-oss", Dim: 2880, Layers: 24, Heads: 64, KVHeads: 8, HeadDim: 64, FFN: 2880, QKVBias: true,
		Vocab: 201088, Context: 131072, RopeBase: 150000, NormEps: 1e-5, Window: 128,
		Experts: 32, ExpertsUsed: 4, ExpertFFN: 2880, YaRN: 32, OrigCtx: 4096},
	{Name: "gpt-oss-20b-l4", Arch: "gpt-oss", Dim: 2880, Layers: 4, Heads: 64, KVHeads: 8, HeadDim: 64, FFN: 2880, QKVBias: true,
		Vocab: 201088, Context: 131072, RopeBase: 150000, NormEps: 1e-5, Window: 128,
		Experts: 32, ExpertsUsed: 4, ExpertFFN: 2880, YaRN: 32, OrigCtx: 4096},
	// gpt-oss-tiny is for tests: gpt-oss's layout (q wider than dim, 4 query
	// heads per KV head, top 4 of 8 experts, YaRN) with a window of 16.
	{Name: "gpt-oss-tiny", Arch: "gpt-oss", Dim: 256, Layers: 4, Heads: 8, KVHeads: 2, HeadDim: 64, FFN: 256, QKVBias: true,
		Vocab: 512, Context: 131072, RopeBase: 150000, NormEps: 1e-5, Window: 16,
		Experts: 8, ExpertsUsed: 4, ExpertFFN: 256, YaRN: 32, OrigCtx: 4096},
	{Name: "qwen2moe-tiny", Arch: "qwen2moe", Dim: 256, Layers: 4, Heads: 8, KVHeads: 2, FFN: 768, QKVBias: true,
		Vocab: 512, Context: 2048, RopeBase: 1000000, NormEps: 1e-6, Experts: 8, ExpertsUsed: 2, ExpertFFN: 256, SharedFFN: 512},
}

// LookupShape returns the shape called name.
func LookupShape(name string) (Shape, bool) {
	i := slices.IndexFunc(Shapes, func(s Shape) bool { return s.Name == name })
	if i < 0 {
		return Shape{}, false
	}
	return Shapes[i], true
}
