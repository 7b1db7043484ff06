package model

import (
	"fmt"

	"github.com/troupe-llm/troupe/compute"
)

// Weights are a model's parameters. Matrices are views of the file's mapped
// bytes in their stored type; norm vectors and biases are small float32
// copies.
type Weights struct {
	TokEmbd    *compute.Tensor // (vocab, dim)
	OutputNorm []float32       // (dim)
	Output     *compute.Tensor // (vocab, dim); TokEmbd when tied
	Layers     []LayerWeights

	// Repack is how the matrices were bound: RepackAll, RepackDense or
	// RepackNone (repack.go).
	Repack Repack
	// Stage is the pipeline stage loaded (stage.go): the other layers'
	// LayerWeights are empty; the zero value, the whole model.
	Stage Stage
}

// LayerWeights are one transformer block's parameters.
type LayerWeights struct {
	AttnNorm            []float32       // (dim)
	Q                   *compute.Tensor // (heads*head_dim, dim)
	K, V                *compute.Tensor // (kv_heads*head_dim, dim)
	O                   *compute.Tensor // (dim, heads*head_dim)
	QBias, KBias, VBias []float32       // (heads*head_dim), (kv_dim), (kv_dim); nil unless Config.QKVBias
	QNorm, KNorm        []float32       // (head_dim); nil unless Config.QKNorm
	FFNNorm             []float32       // (dim)
	Gate, Up            *compute.Tensor // (ffn, dim)
	Down                *compute.Tensor // (dim, ffn)
	MoE                 *MoEWeights     // experts in place of Gate, Up, Down; nil for a dense layer (moe.go)

	AttnPostNorm, FFNPostNorm []float32 // (dim); nil unless Config.PostNorms (Gemma)

	OBias []float32 // (dim) the attention output's bias; nil unless Config.OBias (gpt-oss)
	Sinks []float32 // (heads) attention sink logits; nil unless Config.AttnSinks (gpt-oss)
}

// TensorSource gives tensors by their GGUF name ("blk.0.attn_q.weight").
type TensorSource interface {
	Tensor(name string) (*compute.Tensor, error)
}

// loadWeights reads every tensor the Config calls for and checks its shape.
func loadWeights(src TensorSource, c *Config, o LoadOptions) (*Weights, error) {
	if err := o.Stage.Check(c); err != nil {
		return nil, err
	}
	l := &loader{src: src}
	st := o.Stage.of(c) // a pipeline stage loads only its own tensors (stage.go)
	w := &Weights{}
	if st != (Stage{0, c.Layers}) {
		w.Stage = st
	}
	if st.First() || st.Last(c) && c.TiedOutput {
		w.TokEmbd = l.matrix("token_embd.weight", c.Dim, c.VocabSize)
	}
	if st.Last(c) {
		w.OutputNorm = l.vector("output_norm.weight", c.Dim)
		if c.TiedOutput {
			w.Output = w.TokEmbd
		} else {
			w.Output = l.matrix("output.weight", c.Dim, c.VocabSize)
		}
	}
	qDim, kvDim := c.Heads*c.HeadDim, c.KVDim()
	w.Layers = make([]LayerWeights, c.Layers)
	for i := range w.Layers {
		if i < st.Lo || i >= st.Hi {
			continue // another stage's layer: its pages are never touched
		}
		p := fmt.Sprintf("blk.%d.", i)
		lw := &w.Layers[i]
		lw.AttnNorm = l.vector(p+"attn_norm.weight", c.Dim)
		l.loadFused(lw, p, c)
		if !c.FusedQKV {
			lw.Q = l.matrix(p+"attn_q.weight", c.Dim, qDim)
			lw.K = l.matrix(p+"attn_k.weight", c.Dim, kvDim)
			lw.V = l.matrix(p+"attn_v.weight", c.Dim, kvDim)
		}
		lw.O = l.matrix(p+"attn_output.weight", qDim, c.Dim)
		if c.QKVBias {
			lw.QBias = l.vector(p+"attn_q.bias", qDim)
			lw.KBias = l.vector(p+"attn_k.bias", kvDim)
			lw.VBias = l.vector(p+"attn_v.bias", kvDim)
		}
		if c.QKNorm {
			lw.QNorm = l.vector(p+"attn_q_norm.weight", c.HeadDim)
			lw.KNorm = l.vector(p+"attn_k_norm.weight", c.HeadDim)
		}
		lw.FFNNorm = l.vector(p+ffnNormName(c), c.Dim)
		l.gptoss(lw, p, c)
		if c.Experts > 0 {
			lw.MoE = l.moe(p, c)
			continue
		}
		if !c.FusedGateUp {
			lw.Gate = l.matrix(p+"ffn_gate.weight", c.Dim, c.FFNDim)
			lw.Up = l.matrix(p+"ffn_up.weight", c.Dim, c.FFNDim)
		}
		lw.Down = l.matrix(p+"ffn_down.weight", c.FFNDim, c.Dim)
		if c.PostNorms {
			lw.AttnPostNorm = l.vector(p+"post_attention_norm.weight", c.Dim)
			lw.FFNPostNorm = l.vector(p+"post_ffw_norm.weight", c.Dim)
		}
	}
	if l.err != nil {
		return nil, l.err
	}
	mats := []*compute.Tensor{w.Output}
	for i := range w.Layers {
		lw := &w.Layers[i]
		mats = append(mats, lw.Q, lw.K, lw.V, lw.O, lw.Gate, lw.Up, lw.Down)
		mats = append(mats, lw.MoE.Matrices()...)
	}
	w.Repack = applyRepack(o, w, mats)
	// Packed weights are a copy: let the mapped originals leave resident
	// memory (they are read again from the file if ever touched). The
	// embedding stays, as every token looks rows up in it.
	var drop func(*compute.Tensor)
	if d, ok := src.(interface{ DropPages([]byte) }); ok {
		drop = func(t *compute.Tensor) {
			if t != w.TokEmbd {
				d.DropPages(t.Data)
			}
		}
	}
	compute.Prepare(mats, 2, drop)
	return w, nil
}

// loader keeps the first error so loadWeights reads as a list.
type loader struct {
	src TensorSource
	err error
}

// tensor fetches name unless an earlier lookup failed.
func (l *loader) tensor(name string) *compute.Tensor {
	if l.err != nil {
		return nil
	}
	t, err := l.src.Tensor(name)
	if err != nil {
		l.err = err
		return nil
	}
	return t
}

func (l *loader) matrix(name string, cols, rows int) *compute.Tensor {
	t := l.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Shape) != 2 || t.Shape[0] != cols || t.Shape[1] != rows {
		l.err = fmt.Errorf("model: tensor %q has shape %v, want [%d %d]", name, t.Shape, cols, rows)
		return nil
	}
	return t
}

func (l *loader) vector(name string, n int) []float32 {
	t := l.tensor(name)
	if t == nil {
		return nil
	}
	if t.Elems() != n {
		l.err = fmt.Errorf("model: tensor %q has shape %v, want %d values", name, t.Shape, n)
		return nil
	}
	out := make([]float32, n)
	if err := compute.Dequantize(t.Type, t.Data, out); err != nil {
		l.err = fmt.Errorf("model: tensor %q: %w", name, err)
		return nil
	}
	return out
}
