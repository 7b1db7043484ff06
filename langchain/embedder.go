package langchain

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/embeddings"

	"github.com/troupe-llm/troupe"
)

// Embedder is a troupe.Model as langchaingo's embeddings.Embedder: unit
// vectors, as troupe.Model.Embed computes them.
type Embedder struct {
	m *troupe.Model
}

var _ embeddings.Embedder = (*Embedder)(nil)

// NewEmbedder returns an Embedder over m; m stays the caller's to close.
func NewEmbedder(m *troupe.Model) *Embedder { return &Embedder{m: m} }

// embedBatch bounds the texts sent to the runtime at once, so that a long
// list of documents does not hold all its sequences' memory together.
const embedBatch = 64

// EmbedDocuments returns a vector for each text.
func (e *Embedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += embedBatch {
		vecs, err := e.m.Embed(ctx, texts[start:min(start+embedBatch, len(texts))]...)
		if err != nil {
			return nil, fmt.Errorf("langchain: embedding documents %d on: %w", start, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// EmbedQuery returns text's vector.
func (e *Embedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vecs, err := e.m.Embed(ctx, text)
	if err != nil {
		return nil, fmt.Errorf("langchain: embedding the query: %w", err)
	}
	return vecs[0], nil
}
