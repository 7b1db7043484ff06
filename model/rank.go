package model

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
	"github.com/troupe-llm/troupe/model/tokenizer"
)

// Rerankers, as llama.cpp's LLAMA_POOLING_TYPE_RANK (llm_graph_context::
// build_pooling): a model whose file says <arch>.pooling_type 4 scores a
// query and a document read as one sequence. The sequence's first token
// (BERT-family cross-encoders such as bge-reranker) or its last (qwen3:
// Qwen3-Reranker) is pooled from the final hidden states, then the
// classification head makes the score:
//
//	x = tanh(cls · x + cls_b)          when the file has cls.weight
//	x = cls.output · x + cls.output_b   when it has cls.output.weight
//	x = softmax(x)                      qwen3 (labels "yes", "no")
//	score = x[0]
//
// A BERT reranker's score is a logit; a Qwen3-Reranker's is the
// probability of "yes".

// ErrNotReranker is wrapped by the errors of a model that does not rerank.
var ErrNotReranker = errors.New("not a reranker")

// rankHead is a reranker's classification head and prompt.
type rankHead struct {
	Cls      *compute.Tensor // (dim, dim) cls.weight; nil when absent
	ClsBias  []float32       // (dim) cls.bias; nil when absent
	Out      *compute.Tensor // (labels, dim) cls.output.weight; nil when absent
	OutBias  []float32       // (labels) cls.output.bias; nil when absent
	Softmax  bool            // qwen3: the scores are the labels' softmax
	Last     bool            // qwen3: the last token is pooled, not the first
	Template string          // tokenizer.chat_template.rerank: the prompt, with {query} and {document}; "" for none
}

// loadRankHead reads the classification head of a reranker's file (its
// pooling_type rank); other files get none.
func (m *Model) loadRankHead(f *gguf.File) error {
	c := &m.Config
	if c.Pooling != PoolingRank {
		return nil
	}
	qwen3 := c.Arch == "qwen3"
	if !c.Encoder && !qwen3 {
		return fmt.Errorf("model: %s: rank pooling on a %s model: troupe reranks with BERT-family encoders and qwen3", f.Path, c.Arch)
	}
	labels := 1
	if ls, ok := f.Strings(c.Arch + ".classifier.output_labels"); ok && len(ls) > 0 {
		labels = len(ls)
	}
	h := &rankHead{Softmax: qwen3, Last: qwen3}
	h.Template, _ = f.String("tokenizer.chat_template.rerank")
	l := &loader{src: f}
	opt := func(name string) bool { _, err := f.Tensor(name); return err == nil }
	if opt("cls.weight") {
		h.Cls = l.matrix("cls.weight", c.Dim, c.Dim)
		if opt("cls.bias") {
			h.ClsBias = l.vector("cls.bias", c.Dim)
		}
	}
	if opt("cls.output.weight") {
		h.Out = l.matrix("cls.output.weight", c.Dim, labels)
		if opt("cls.output.bias") {
			h.OutBias = l.vector("cls.output.bias", labels)
		}
	}
	if l.err != nil {
		return fmt.Errorf("model: %s: classification head: %w", f.Path, l.err)
	}
	var mats []*compute.Tensor
	for _, t := range []*compute.Tensor{h.Cls, h.Out} {
		if t != nil {
			mats = append(mats, t)
		}
	}
	compute.Prepare(mats, 1, nil)
	m.rank = h
	return nil
}

// Reranker returns nil when m scores query-document pairs (RankScore), and
// otherwise an error wrapping ErrNotReranker that says why.
func (m *Model) Reranker() error {
	if m.rank == nil {
		return fmt.Errorf("%w: %s model whose file has %s pooling, not rank (a reranker's GGUF has <arch>.pooling_type 4)",
			ErrNotReranker, m.Config.Arch, m.Config.Pooling)
	}
	return nil
}

// RankPooling is the pooling whose result RankScore takes: the last token
// (qwen3) or the first.
func (m *Model) RankPooling() Pooling {
	if m.rank != nil && m.rank.Last {
		return PoolingLast
	}
	return PoolingCLS
}

// RankScore applies the classification head to a pooled hidden state
// (Dim values, not normalized) and returns the score.
func (m *Model) RankScore(pooled []float32) (float32, error) {
	h := m.rank
	if h == nil {
		return 0, m.Reranker()
	}
	if len(pooled) != m.Config.Dim {
		return 0, fmt.Errorf("model: rank: pooled state of %d values, want %d", len(pooled), m.Config.Dim)
	}
	mm := compute.NewMatMuler(1)
	x := pooled
	if h.Cls != nil {
		y := make([]float32, h.Cls.Rows())
		if err := mm.MatMul(y, x, 1, h.Cls); err != nil {
			return 0, fmt.Errorf("model: rank: %w", err)
		}
		addBias(y, 1, h.ClsBias)
		for i, v := range y {
			y[i] = compute.Tanhf(v)
		}
		x = y
	}
	if h.Out != nil {
		y := make([]float32, h.Out.Rows())
		if err := mm.MatMul(y, x, 1, h.Out); err != nil {
			return 0, fmt.Errorf("model: rank: %w", err)
		}
		addBias(y, 1, h.OutBias)
		x = y
	}
	if h.Softmax {
		return softmaxFirst(x), nil
	}
	return x[0], nil
}

// softmaxFirst is the first value of softmax(x), as ggml_soft_max: the
// exponentials of x - max, in float32, over their sum.
func softmaxFirst(x []float32) float32 {
	mx := x[0]
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64 // ggml_float
	for _, v := range x {
		sum += float64(float32(math.Exp(float64(v - mx))))
	}
	return float32(math.Exp(float64(x[0]-mx))) * float32(1/sum)
}

// RankTokens is the sequence a reranker reads for query and doc, as
// llama-server's format_prompt_rerank: the file's rerank template with
// {query} and {document} replaced (special tokens parsed, none added), or
// else [BOS] query [EOS] [SEP] doc [EOS], each of BOS, EOS and SEP where
// the vocabulary adds it (EOS falling back to SEP).
func (m *Model) RankTokens(t *tokenizer.Tokenizer, query, doc string) ([]int32, error) {
	if err := m.Reranker(); err != nil {
		return nil, err
	}
	if tmpl := m.rank.Template; tmpl != "" {
		p := strings.ReplaceAll(tmpl, "{query}", query)
		p = strings.ReplaceAll(p, "{document}", doc)
		return t.Encode(p, false, true)
	}
	q, err := t.Encode(query, false, false)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	d, err := t.Encode(doc, false, false)
	if err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	v := t.Vocab()
	eos := cmpID(t.EOS(), t.SEP())
	if v.AddEOS && eos < 0 {
		return nil, errors.New("model: rank: the vocabulary adds EOS but has neither EOS nor SEP")
	}
	out := make([]int32, 0, len(q)+len(d)+4)
	if v.AddBOS {
		out = append(out, t.BOS())
	}
	out = append(out, q...)
	if v.AddEOS {
		out = append(out, eos)
	}
	if v.AddSEP {
		out = append(out, t.SEP())
	}
	out = append(out, d...)
	if v.AddEOS {
		out = append(out, eos)
	}
	return out, nil
}

// cmpID is id, or else (when id is -1) fallback.
func cmpID(id, fallback int32) int32 {
	if id >= 0 {
		return id
	}
	return fallback
}
