package synth

import "slices"

// Shape is a real model's architecture and sizes; its weights are left to
// Write.
type Shape struct {
	Name     string
	Arch     string // "llama" or "qwen2"
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

	HeadDim int // key/value length when not Dim/Heads; 0: Dim/Heads

	// Mixture of experts (Arch "qwen2moe", "qwen3moe"; moe.go).
	Experts     int // expert_count
	ExpertsUsed int // expert_used_count
	ExpertFFN   int // expert_feed_forward_length
	SharedFFN   int // expert_shared_feed_forward_length (qwen2moe)
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
	{Name: "qwen2.5-0.5b", Arch: "qwen2", Dim: 896, Layers: 24, Heads: 14, KVHeads: 2, FFN: 4864,
		Vocab: 151936, Context: 32768, RopeBase: 1000000, NormEps: 1e-6, Tied: true, QKVBias: true},
	{Name: "smollm2-135m", Arch: "llama", Dim: 576, Layers: 30, Heads: 9, KVHeads: 3, FFN: 1536,
		Vocab: 49152, Context: 8192, RopeBase: 100000, NormEps: 1e-5, Tied: true},
	{Name: "smollm2-360m", Arch: "llama", Dim: 960, Layers: 32, Heads: 15, KVHeads: 5, FFN: 2560,
		Vocab: 49152, Context: 8192, RopeBase: 100000, NormEps: 1e-5, Tied: true},
	// qwen3-30b-a3b-l6 is Qwen3-30B-A3B with 6 of its 48 layers, to fit in
	// memory: the speed of a token through those layers is the model's
	// over 8.
	{Name: "qwen3-30b-a3b-l6", Arch: "qwen3moe", Dim: 2048, Layers: 6, Heads: 32, KVHeads: 4, HeadDim: 128, FFN: 6144,
		Vocab: 151936, Context: 40960, RopeBase: 1000000, NormEps: 1e-6, Experts: 128, ExpertsUsed: 8, ExpertFFN: 768},
	// qwen3moe-tiny and qwen2moe-tiny are for tests: 8 experts, top 2
	// (qwen2moe: and a shared expert).
	{Name: "qwen3moe-tiny", Arch: "qwen3moe", Dim: 256, Layers: 4, Heads: 8, KVHeads: 2, FFN: 768,
		Vocab: 512, Context: 2048, RopeBase: 1000000, NormEps: 1e-6, Experts: 8, ExpertsUsed: 2, ExpertFFN: 256},
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
