package actors

import "fmt"

// ModelInfo describes the served model to a front end, so that it names no
// type of package model (internal/depgraph checks the server for that).
type ModelInfo struct {
	Path string // the model file, or a safetensors checkpoint's directory
	Arch string // "llama", "qwen2", "bert", ...

	Dim        int // width of the residual stream (and of an encoder's embeddings)
	Layers     int
	Heads      int // query heads
	KVHeads    int // key/value heads
	HeadDim    int
	FFNDim     int // hidden width of the feed-forward block
	VocabSize  int
	ContextLen int // positions the model was trained on
	NormEps    float32
	RopeDim    int
	RopeBase   float32

	// Params is the parameter count of the dense transformer the
	// configuration describes (biases and norms aside from the per-layer
	// ones): embeddings, attention, feed-forward, norms, and the output
	// unless tied.
	Params int64
	// WeightType names the first layer's quantized weight type ("Q4_K",
	// ...); "" when its weights are not quantized.
	WeightType string
	Encoder    bool  // an encoder: embeddings (or reranking) only, no generation
	BOS        int32 // the tokenizer's beginning-of-sequence token
}

// Info describes the served model.
func (r *Runtime) Info() ModelInfo {
	m := r.model
	c := &m.Config
	q, kv := c.Heads*c.HeadDim, c.KVDim()
	params := int64(c.VocabSize*c.Dim) + int64(c.Layers)*int64(2*c.Dim*q+2*c.Dim*kv+3*c.Dim*c.FFNDim+2*c.Dim) + int64(c.Dim)
	if !c.TiedOutput {
		params += int64(c.VocabSize * c.Dim)
	}
	quant := ""
	if w := m.Weights; w != nil && len(w.Layers) > 0 && w.Layers[0].Q != nil {
		quant = fmt.Sprint(w.Layers[0].Q.Type)
	}
	return ModelInfo{Path: m.Path, Arch: c.Arch, Dim: c.Dim, Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads,
		HeadDim: c.HeadDim, FFNDim: c.FFNDim, VocabSize: c.VocabSize, ContextLen: c.ContextLen, NormEps: c.NormEps,
		RopeDim: c.RopeDim, RopeBase: c.RopeBase, Params: params, WeightType: quant, Encoder: c.Encoder, BOS: r.tok.BOS()}
}
