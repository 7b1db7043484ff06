package actors

import (
	"context"
	"fmt"

	"github.com/troupe-llm/troupe/messages"
)

// Reranking: each query-document pair is one prefill-only sequence, run as
// an embedding is (pooled), pooled as the reranker says (its first token,
// or its last for qwen3) and scored by the model's classification head
// (model.RankScore).

// Reranker returns nil when the served model reranks, else an error
// wrapping model.ErrNotReranker that says why.
func (r *Runtime) Reranker() error { return r.model.Reranker() }

// RankTokens is the sequence the reranker reads for query and doc
// (model.RankTokens: its rerank prompt, or [BOS] query [EOS] [SEP] doc [EOS]).
func (r *Runtime) RankTokens(query, doc string) ([]int32, error) {
	return r.model.RankTokens(r.tok, query, doc)
}

// Rerank scores each input, a query-document sequence made by RankTokens,
// and returns the scores in input order with the token usage. Its errors
// are Embed's (inputs that can never be served wrap ErrInvalidRequest, with
// Param "documents"), and one wrapping ErrInvalidRequest when the model is
// not a reranker.
func (r *Runtime) Rerank(ctx context.Context, inputs [][]int32, priority int) ([]float32, *messages.Usage, error) {
	if err := r.model.Reranker(); err != nil {
		return nil, nil, &RequestError{Param: "model", Msg: fmt.Sprintf("the served model %s", err)}
	}
	if err := r.checkPooledInputs(inputs, "documents", "query + document"); err != nil {
		return nil, nil, err
	}
	pooled, err := r.pooled(ctx, inputs, r.model.RankPooling(), priority)
	if err != nil {
		return nil, nil, err
	}
	scores := make([]float32, len(pooled))
	usage := &messages.Usage{}
	for i, v := range pooled {
		if scores[i], err = r.model.RankScore(v); err != nil {
			return nil, nil, fmt.Errorf("actors: rerank document %d: %w", i, err)
		}
		usage.PromptTokens += len(inputs[i])
	}
	return scores, usage, nil
}
