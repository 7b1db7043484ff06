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
	// Encoders (embeddings only; model/synth/bert.go), with a WordPiece --vocab.
	{Name: "bge-small", Arch: "bert", Dim: 384, Layers: 12, Heads: 12, KVHeads: 12, FFN: 1536,
		Vocab: 30522, Context: 512, NormEps: 1e-12},
	{Name: "bert-tiny", Arch: "bert", Dim: 128, Layers: 2, Heads: 4, KVHeads: 4, FFN: 512,
		Vocab: 30522, Context: 128, NormEps: 1e-12},
	{Name: "nomic-embed-text", Arch: "nomic-bert", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, FFN: 3072,
		Vocab: 30522, Context: 2048, RopeBase: 1000, NormEps: 1e-12},
	{Name: "nomic-bert-tiny", Arch: "nomic-bert", Dim: 128, Layers: 2, Heads: 4, KVHeads: 4, FFN: 256,
		Vocab: 30522, Context: 128, RopeBase: 1000, NormEps: 1e-12},
}

// LookupShape returns the shape called name.
func LookupShape(name string) (Shape, bool) {
	i := slices.IndexFunc(Shapes, func(s Shape) bool { return s.Name == name })
	if i < 0 {
		return Shape{}, false
	}
	return Shapes[i], true
}
