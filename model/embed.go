package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/kv"
)

// Pooling is how the final hidden states of a sequence make one embedding,
// as llama.cpp's llama_pooling_type; its values are those of a GGUF file's
// "<arch>.pooling_type" key.
type Pooling int

const (
	PoolingNone Pooling = 0 // no pooling: the file does not say (troupe then pools by mean)
	PoolingMean Pooling = 1 // the mean over the sequence's tokens
	PoolingCLS  Pooling = 2 // the first token
	PoolingLast Pooling = 3 // the last token
	PoolingRank Pooling = 4 // a reranker's classification head (not supported)
)

var poolingNames = map[Pooling]string{PoolingNone: "none", PoolingMean: "mean", PoolingCLS: "cls", PoolingLast: "last", PoolingRank: "rank"}

func (p Pooling) String() string {
	if s, ok := poolingNames[p]; ok {
		return s
	}
	return fmt.Sprintf("pooling(%d)", int(p))
}

// ParsePooling reads "mean", "cls" or "last"; "" is PoolingNone (the
// model's own pooling).
func ParsePooling(s string) (Pooling, error) {
	switch s {
	case "":
		return PoolingNone, nil
	case "mean":
		return PoolingMean, nil
	case "cls":
		return PoolingCLS, nil
	case "last":
		return PoolingLast, nil
	}
	return 0, fmt.Errorf("model: pooling %q: want mean, cls or last", s)
}

// EmbedPooling is the pooling an embedding of m uses when the caller asks
// for want: want itself, else the model file's own, else mean.
func (m *Model) EmbedPooling(want Pooling) (Pooling, error) {
	p := want
	if p == PoolingNone {
		p = m.Config.Pooling
	}
	switch p {
	case PoolingNone:
		return PoolingMean, nil
	case PoolingMean, PoolingCLS, PoolingLast:
		return p, nil
	case PoolingRank:
		return 0, errors.New("model: this model is a reranker (rank pooling): it scores query-document pairs (rerank), it makes no embeddings")
	}
	return 0, fmt.Errorf("model: %s pooling is not supported", p)
}

// NumHidden is the number of rows with Hidden set.
func (b *Batch) NumHidden() int { return numSet(b.Hidden) }

// ForwardHidden is Forward that also stores the final hidden states (after
// the output norm, as llama.cpp's embeddings) of the rows with b.Hidden set
// into hidden, (NumHidden, Dim), in batch order. Like the logits, a row's
// hidden state does not depend on the rest of the batch.
func (m *Model) ForwardHidden(s *State, b *Batch, cache *kv.Cache, logits, hidden []float32) error {
	if len(b.Hidden) != len(b.Tokens) {
		return fmt.Errorf("model: batch of %d tokens has %d hidden flags", len(b.Tokens), len(b.Hidden))
	}
	if n := b.NumHidden(); len(hidden) < n*m.Config.Dim {
		return fmt.Errorf("model: hidden buffer holds %d values, need %d×%d", len(hidden), n, m.Config.Dim)
	}
	s.hidden = hidden
	defer func() { s.hidden = nil }()
	return m.Forward(s, b, cache, logits)
}

// storeHidden writes the normed final hidden states of the rows with Hidden
// set to s.hidden, when ForwardHidden asked for them. Forward calls it after
// the last layer.
func (m *Model) storeHidden(s *State, b *Batch) {
	if s.hidden == nil {
		return
	}
	dim, r := m.Config.Dim, 0
	for i, want := range b.Hidden {
		if want {
			compute.RMSNorm(s.hidden[r*dim:(r+1)*dim], s.x[i*dim:(i+1)*dim], m.Weights.OutputNorm, m.Config.NormEps)
			r++
		}
	}
}

// Pooler pools one sequence's final hidden states over the steps that
// compute its tokens, fed in position order. A row at position 0 starts
// over (the sequence was recomputed). The result depends only on the rows,
// not on how the sequence was split into steps.
type Pooler struct {
	Type Pooling
	sum  []float64 // (dim) mean: the sum of the rows so far
	row  []float32 // (dim) cls: the first row; last: the latest
	n    int       // rows added since position 0
}

// Add takes the hidden state h of the token at position pos.
func (p *Pooler) Add(pos int, h []float32) {
	if pos == 0 {
		p.n = 0
		clear(p.sum)
	}
	switch p.Type {
	case PoolingMean:
		if len(p.sum) != len(h) {
			p.sum = make([]float64, len(h))
		}
		for i, v := range h {
			p.sum[i] += float64(v)
		}
	case PoolingCLS:
		if pos == 0 {
			p.row = append(p.row[:0], h...)
		}
	default: // last
		p.row = append(p.row[:0], h...)
	}
	p.n++
}

// Result returns the pooled embedding, not normalized (nil before any
// row).
func (p *Pooler) Result() []float32 {
	if p.n == 0 {
		return nil
	}
	if p.Type != PoolingMean {
		return append([]float32(nil), p.row...)
	}
	out := make([]float32, len(p.sum))
	for i, v := range p.sum {
		out[i] = float32(v / float64(p.n))
	}
	return out
}

// Normalize scales v in place as llama.cpp's common_embd_normalize with
// embd_norm = norm: -1 none, 0 max absolute value to the int16 range,
// 2 Euclidean (llama-embedding's default), other p > 0 the p-norm.
func Normalize(v []float32, norm int) {
	var sum float64
	switch norm {
	case -1:
		return
	case 0:
		for _, x := range v {
			sum = max(sum, math.Abs(float64(x)))
		}
		sum /= 32760
	case 2:
		for _, x := range v {
			sum += float64(x * x)
		}
		sum = math.Sqrt(sum)
	default:
		for _, x := range v {
			sum += math.Pow(math.Abs(float64(x)), float64(norm))
		}
		sum = math.Pow(sum, 1/float64(norm))
	}
	var scale float32
	if sum > 0 {
		scale = float32(1 / sum)
	}
	for i := range v {
		v[i] *= scale
	}
}
