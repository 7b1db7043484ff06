package model

import (
	"fmt"
	"math"
	"sync"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/kv"
)

// BERT-family encoders (GGUF archs "bert" and "nomic-bert", as llama.cpp's
// llm_build_bert): bidirectional attention, post-layer-norm blocks with
// biases, token-type and (bert) absolute position embeddings or
// (nomic-bert) rotary positions, a GELU (bert) or SwiGLU (nomic-bert)
// feed-forward, and no output head: their only output is the final hidden
// states, which embeddings pool. A sequence must be computed whole in one
// batch (each token attends to all of it).

// bertWeights are an encoder's parameters.
type bertWeights struct {
	TokEmbd          *compute.Tensor // (vocab, dim)
	TypeEmbd0        []float32       // (dim) token type 0's embedding; nil when the file has none
	PosEmbd          *compute.Tensor // (context, dim) bert only
	EmbNorm, EmbBias []float32       // (dim) layer norm of the embeddings
	Layers           []bertLayer
}

type bertLayer struct {
	QKV              *compute.Tensor // (3*dim, dim) fused q, k, v; nil when separate
	QKVBias          []float32       // (3*dim) or nil
	Q, K, V          *compute.Tensor // (dim, dim) when not fused
	QBias, KBias     []float32       // (dim) or nil
	VBias            []float32       // (dim) or nil
	O                *compute.Tensor // (dim, dim)
	OBias            []float32       // (dim) or nil
	AttnNorm         []float32       // (dim) attn_output_norm: after the attention's residual add
	AttnNormBias     []float32       // (dim)
	Up, Gate, Down   *compute.Tensor // (ffn, dim), (ffn, dim) nomic-bert only, (dim, ffn)
	UpBias, DownBias []float32       // (ffn), (dim) or nil
	OutNorm          []float32       // (dim) layer_output_norm: after the feed-forward's residual add
	OutNormBias      []float32       // (dim)
}

// IsEncoder reports whether arch is a BERT-family encoder.
func IsEncoder(arch string) bool { return arch == "bert" || arch == "nomic-bert" }

// bertConfig completes an encoder's Config from its GGUF keys.
func bertConfig(c *Config, r *ggufKeys) {
	if !IsEncoder(c.Arch) {
		return
	}
	c.Encoder = true
	c.NormEps = float32(r.float("attention.layer_norm_epsilon", 1e-12))
	c.RopeNeox = c.Arch == "nomic-bert" // llama.cpp's LLAMA_ROPE_TYPE_NEOX for it
	c.RopeBase = float32(r.float("rope.freq_base", 1000))
	c.TiedOutput = false
}

// bertFromGGUF loads an encoder's weights.
func bertFromGGUF(src TensorSource, c *Config) (*bertWeights, error) {
	l := &loader{src: src}
	dim, ffn := c.Dim, c.FFNDim
	opt := func(name string, n int) []float32 {
		if l.err != nil {
			return nil
		}
		if _, err := src.Tensor(name); err != nil {
			return nil // absent
		}
		return l.vector(name, n)
	}
	w := &bertWeights{TokEmbd: l.matrix("token_embd.weight", dim, c.VocabSize),
		EmbNorm: l.vector("token_embd_norm.weight", dim), EmbBias: l.vector("token_embd_norm.bias", dim)}
	if t, err := src.Tensor("token_types.weight"); err == nil && l.err == nil {
		if len(t.Shape) != 2 || t.Shape[0] != dim || t.Type != compute.F32 && t.Type != compute.F16 {
			return nil, fmt.Errorf("model: tensor token_types.weight has shape %v and type %v, want [%d n] of f32 or f16", t.Shape, t.Type, dim)
		}
		w.TypeEmbd0 = make([]float32, dim)
		if err := compute.Dequantize(t.Type, t.Row(0), w.TypeEmbd0); err != nil {
			return nil, fmt.Errorf("model: token_types.weight: %w", err)
		}
	}
	if c.Arch == "bert" {
		w.PosEmbd = l.matrix("position_embd.weight", dim, c.ContextLen)
	}
	w.Layers = make([]bertLayer, c.Layers)
	var mats []*compute.Tensor
	for i := range w.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		lw := &w.Layers[i]
		if _, err := src.Tensor(p + "attn_qkv.weight"); err == nil {
			lw.QKV = l.matrix(p+"attn_qkv.weight", dim, 3*dim)
			lw.QKVBias = opt(p+"attn_qkv.bias", 3*dim)
			mats = append(mats, lw.QKV)
		} else {
			lw.Q, lw.K, lw.V = l.matrix(p+"attn_q.weight", dim, dim), l.matrix(p+"attn_k.weight", dim, dim), l.matrix(p+"attn_v.weight", dim, dim)
			lw.QBias, lw.KBias, lw.VBias = opt(p+"attn_q.bias", dim), opt(p+"attn_k.bias", dim), opt(p+"attn_v.bias", dim)
			mats = append(mats, lw.Q, lw.K, lw.V)
		}
		lw.O, lw.OBias = l.matrix(p+"attn_output.weight", dim, dim), opt(p+"attn_output.bias", dim)
		lw.AttnNorm, lw.AttnNormBias = l.vector(p+"attn_output_norm.weight", dim), l.vector(p+"attn_output_norm.bias", dim)
		lw.Up, lw.UpBias = l.matrix(p+"ffn_up.weight", dim, ffn), opt(p+"ffn_up.bias", ffn)
		lw.Down, lw.DownBias = l.matrix(p+"ffn_down.weight", ffn, dim), opt(p+"ffn_down.bias", dim)
		mats = append(mats, lw.O, lw.Up, lw.Down)
		if c.Arch == "nomic-bert" {
			lw.Gate = l.matrix(p+"ffn_gate.weight", dim, ffn)
			mats = append(mats, lw.Gate)
		}
		lw.OutNorm, lw.OutNormBias = l.vector(p+"layer_output_norm.weight", dim), l.vector(p+"layer_output_norm.bias", dim)
	}
	if l.err != nil {
		return nil, l.err
	}
	if c.Heads != c.KVHeads {
		return nil, fmt.Errorf("model: %s with %d query and %d kv heads: want equal", c.Arch, c.Heads, c.KVHeads)
	}
	compute.Prepare(mats, 2, nil)
	return w, nil
}

// residualLayerNorm is BERT's residual after a sublayer: each of the n rows of x
// (dim wide) becomes layerNorm(x + o), o the sublayer's output (clobbered).
func residualLayerNorm(x, o []float32, n, dim int, w, b []float32, eps float32) {
	for i := range n {
		xi, oi := x[i*dim:(i+1)*dim], o[i*dim:(i+1)*dim]
		compute.Add(oi, xi)
		layerNorm(xi, oi, w, b, eps)
	}
}

// layerNorm is ggml's norm followed by the weight and bias: (x - mean) /
// sqrt(var + eps) * w + b, the mean and variance summed in float64.
func layerNorm(dst, x, w, b []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum / float64(len(x)))
	var sum2 float64
	for i, v := range x {
		d := v - mean
		dst[i] = d
		sum2 += float64(d * d)
	}
	scale := float32(1 / math.Sqrt(sum2/float64(len(x))+float64(eps)))
	for i := range dst {
		// Explicit conversion: no fused multiply-add, as amd64 computes it.
		dst[i] = float32(dst[i]*scale*w[i]) + b[i]
	}
}

// geluF32 is ggml's tanh approximation of GELU in float32.
func geluF32(h float32) float32 {
	const sqrt2OverPi, coefA = 0.79788456080286535587989211986876, 0.044715
	return 0.5 * h * (1 + float32(math.Tanh(float64(sqrt2OverPi*h*(1+float32(coefA*h*h))))))
}

// geluTable maps each f16 value (by its bits) to the f16 of its GELU, as
// ggml's table_gelu_f16; built once, read only.
var geluTable = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for i := range t {
		t[i] = compute.RoundF16(geluF32(compute.FP16ToFP32(uint16(i))))
	}
	return t
})

// gelu is ggml's GELU on the CPU: the input rounded to f16 and looked up in
// geluTable, 0 at or below -10, the identity at or above 10.
func gelu(x []float32) {
	t := geluTable()
	var bits [256]uint16
	for lo := 0; lo < len(x); lo += len(bits) {
		xs := x[lo:min(len(x), lo+len(bits))]
		compute.F16s(bits[:len(xs)], xs)
		for i, v := range xs {
			switch {
			case v <= -10:
				xs[i] = 0
			case v >= 10:
			default:
				xs[i] = t[bits[i]]
			}
		}
	}
}

// addBias adds bias (when not nil) to each of the n rows of x.
func addBias(x []float32, n int, bias []float32) {
	if bias == nil {
		return
	}
	for i := range n {
		compute.Add(x[i*len(bias):(i+1)*len(bias)], bias)
	}
}

// bertForward runs an encoder over the batch: every sequence in it must be
// whole (positions 0..len-1), since each token attends to all of its
// sequence. Its keys and values go through the cache as a decoder's do; the
// final hidden states of the rows with Hidden set go to s.hidden
// (ForwardHidden). logits is left zero: an encoder has no output head.
func (m *Model) bertForward(s *State, b *Batch, cache *kv.Cache, logits []float32) error {
	c, w := &m.Config, m.bert
	if cache.Layers != c.Layers || cache.KVDim != c.KVDim() || cache.Type != kv.F16 {
		return fmt.Errorf("model: %s needs an f16 cache of %d layers of kv dim %d", c.Arch, c.Layers, c.KVDim())
	}
	if err := b.Validate(c, cache.BlockSize, cache.NumBlocks); err != nil {
		return err
	}
	clear(logits)
	n := len(b.Tokens)
	if n == 0 {
		return nil
	}
	seqLen := make([]int32, len(b.BlockTables)) // tokens of each sequence in the batch
	maxPos := 0
	for i, p := range b.Positions {
		maxPos = max(maxPos, int(p))
		seqLen[b.Seq[i]]++
	}
	for i, p := range b.Positions {
		if int(p) >= int(seqLen[b.Seq[i]]) {
			return fmt.Errorf("model: %s: batch token %d at position %d of a sequence of %d tokens in the batch: an encoder needs whole sequences", c.Arch, i, p, seqLen[b.Seq[i]])
		}
		if w.PosEmbd != nil && int(p) >= c.ContextLen {
			return fmt.Errorf("model: %s: position %d past the context of %d", c.Arch, p, c.ContextLen)
		}
	}
	s.reserve(c, n, maxPos)
	if len(s.qkv) < n*3*c.Dim {
		s.qkv = make([]float32, n*3*c.Dim)
	}
	dim := c.Dim
	for i, tok := range b.Tokens {
		slot, _ := cache.Slot(b.BlockTables[b.Seq[i]], int(b.Positions[i])) // checked by validate
		s.slots[i] = int32(slot)
		x := s.x[i*dim : (i+1)*dim]
		if err := compute.Dequantize(w.TokEmbd.Type, w.TokEmbd.Row(int(tok)), x); err != nil {
			return fmt.Errorf("model: embedding: %w", err)
		}
		if w.TypeEmbd0 != nil {
			compute.Add(x, w.TypeEmbd0)
		}
		if w.PosEmbd != nil {
			pe := s.xb[i*dim : (i+1)*dim]
			if err := compute.Dequantize(w.PosEmbd.Type, w.PosEmbd.Row(int(b.Positions[i])), pe); err != nil {
				return fmt.Errorf("model: position embedding: %w", err)
			}
			compute.Add(x, pe)
		} else {
			compute.RopeTable(s.rope[i*c.RopeDim:(i+1)*c.RopeDim], int(b.Positions[i]), c.RopeBase, c.RopeScale, nil)
		}
		layerNorm(x, x, w.EmbNorm, w.EmbBias, c.NormEps)
	}
	s.encLen = seqLen
	defer func() { s.encLen = nil }()
	for l := range w.Layers {
		if err := m.bertLayer(s, b, cache, l, n); err != nil {
			return err
		}
	}
	if s.hidden != nil {
		r := 0
		for i, want := range b.Hidden {
			if want {
				copy(s.hidden[r*dim:(r+1)*dim], s.x[i*dim:(i+1)*dim])
				r++
			}
		}
	}
	return nil
}

// bertLayer runs encoder block l over the n tokens of the batch.
func (m *Model) bertLayer(s *State, b *Batch, cache *kv.Cache, l, n int) error {
	c, lw := &m.Config, &m.bert.Layers[l]
	dim, hd, ffn := c.Dim, c.HeadDim, c.FFNDim
	if lw.QKV != nil {
		if err := s.mm.MatMul(s.qkv, s.x, n, lw.QKV); err != nil {
			return err
		}
		addBias(s.qkv, n, lw.QKVBias)
		for i := range n {
			row := s.qkv[i*3*dim : (i+1)*3*dim]
			copy(s.q[i*dim:(i+1)*dim], row[:dim])
			copy(s.k[i*dim:(i+1)*dim], row[dim:2*dim])
			copy(s.v[i*dim:(i+1)*dim], row[2*dim:])
		}
	} else {
		for _, p := range []struct {
			out  []float32
			w    *compute.Tensor
			bias []float32
		}{{s.q, lw.Q, lw.QBias}, {s.k, lw.K, lw.KBias}, {s.v, lw.V, lw.VBias}} {
			if err := s.mm.MatMul(p.out, s.x, n, p.w); err != nil {
				return err
			}
			addBias(p.out, n, p.bias)
		}
	}
	for i := range n {
		q, k, v := s.q[i*dim:(i+1)*dim], s.k[i*dim:(i+1)*dim], s.v[i*dim:(i+1)*dim]
		if m.bert.PosEmbd == nil { // rotary positions
			cs := s.rope[i*c.RopeDim : (i+1)*c.RopeDim]
			for h := range c.Heads {
				compute.RopeApply(q[h*hd:(h+1)*hd], cs, c.RopeNeox)
				compute.RopeApply(k[h*hd:(h+1)*hd], cs, c.RopeNeox)
			}
		}
		cache.Store(l, int(s.slots[i]), k, v)
	}
	m.attention(s, b, cache, l, n) // every token over its whole sequence: s.encLen
	if err := s.mm.MatMul(s.ob, s.att, n, lw.O); err != nil {
		return err
	}
	addBias(s.ob, n, lw.OBias)
	residualLayerNorm(s.x, s.ob, n, dim, lw.AttnNorm, lw.AttnNormBias, c.NormEps)

	if err := s.mm.MatMul(s.up, s.x, n, lw.Up); err != nil {
		return err
	}
	addBias(s.up, n, lw.UpBias)
	if lw.Gate != nil { // nomic-bert: SwiGLU
		if err := s.mm.MatMul(s.gate, s.x, n, lw.Gate); err != nil {
			return err
		}
		for i := range n {
			g, u := s.gate[i*ffn:(i+1)*ffn], s.up[i*ffn:(i+1)*ffn]
			compute.SiLUMul(g, g, u)
		}
	}
	act := s.gate
	if lw.Gate == nil { // bert: GELU
		gelu(s.up[:n*ffn])
		act = s.up
	}
	if err := s.mm.MatMul(s.ob, act, n, lw.Down); err != nil {
		return err
	}
	addBias(s.ob, n, lw.DownBias)
	residualLayerNorm(s.x, s.ob, n, dim, lw.OutNorm, lw.OutNormBias, c.NormEps)
	return nil
}

// attended is how many cached positions token i of the batch attends to:
// those up to it, or in an encoder its whole sequence (s.encLen).
func (s *State) attended(b *Batch, i int) int {
	if s.encLen != nil {
		return int(s.encLen[b.Seq[i]])
	}
	if len(b.AttendTo) != 0 && b.AttendTo[i] > b.Positions[i]+1 {
		return int(b.AttendTo[i]) // a row of a bidirectional span (Batch.AttendTo)
	}
	return int(b.Positions[i]) + 1
}

// encoderFromGGUF makes the Model of an encoder's file.
func encoderFromGGUF(src TensorSource, c *Config, path string, closer interface{ Close() error }) (*Model, error) {
	bw, err := bertFromGGUF(src, c)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	return &Model{Config: *c, Weights: &Weights{}, bert: bw, Path: path, closer: closer}, nil
}
