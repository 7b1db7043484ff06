package actors_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/model"
)

// TestRerankRuntime scores query-document pairs through the batcher: every
// score is the same bit for bit alone and beside the others (chunked, for
// the decoder, by a small step budget), the documents get different scores,
// and the usage counts the pairs' tokens.
func TestRerankRuntime(t *testing.T) {
	noLeaks(t)
	docs := []string{"Paris is the capital and largest city of France.", "The little dog ran to the park.", "Lily",
		"Berlin is the capital of Germany, and Paris is the capital of France."}
	for _, shape := range []string{"bge-reranker-tiny", "qwen3-reranker-tiny"} {
		t.Run(shape, func(t *testing.T) {
			m := rerankModel(t, shape)
			rt := start(t, m, actors.Config{MaxNumBatchedTokens: 64})
			var inputs [][]int32
			tokens := 0
			for _, d := range docs {
				in, err := rt.RankTokens("What is the capital of France?", d)
				if err != nil {
					t.Fatal(err)
				}
				inputs = append(inputs, in)
				tokens += len(in)
			}
			all, usage, err := rt.Rerank(context.Background(), inputs, 0)
			if err != nil {
				t.Fatal(err)
			}
			if usage.PromptTokens != tokens {
				t.Errorf("usage %d tokens, want %d", usage.PromptTokens, tokens)
			}
			for i, in := range inputs {
				one, _, err := rt.Rerank(context.Background(), [][]int32{in}, 0)
				if err != nil {
					t.Fatal(err)
				}
				if one[0] != all[i] {
					t.Errorf("document %d: %v alone, %v beside the others", i, one[0], all[i])
				}
			}
			if slices.Min(all) == slices.Max(all) {
				t.Errorf("every document scored %v", all[0])
			}
			t.Logf("scores %v", all)
		})
	}
}

// TestRerankRuntimeErrors: a model that is not a reranker, and inputs that
// can never be served, are invalid requests.
func TestRerankRuntimeErrors(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	rt := start(t, m, actors.Config{})
	if err := rt.Reranker(); !errors.Is(err, model.ErrNotReranker) {
		t.Errorf("Reranker() = %v, want ErrNotReranker", err)
	}
	if _, _, err := rt.Rerank(context.Background(), [][]int32{{1, 2}}, 0); !errors.Is(err, actors.ErrInvalidRequest) {
		t.Errorf("Rerank on stories260K: %v, want ErrInvalidRequest", err)
	}
	rr := start(t, rerankModel(t, "bge-reranker-tiny"), actors.Config{})
	for _, inputs := range [][][]int32{nil, {{}}, {{101, 1 << 20}}} {
		var re *actors.RequestError
		if _, _, err := rr.Rerank(context.Background(), inputs, 0); !errors.As(err, &re) || re.Param != "documents" {
			t.Errorf("Rerank(%v): %v, want a RequestError on documents", inputs, err)
		}
	}
}

// rerankModel writes and opens a reranker shape: bge-reranker's with the
// bge vocabulary (synthEncoder), qwen3's with stories260K's (synthModel).
func rerankModel(t *testing.T, shape string) *model.Model {
	t.Helper()
	s, ok := synth.LookupShape(shape)
	if !ok {
		t.Fatalf("no shape %q", shape)
	}
	if s.Arch == "bert" {
		return synthEncoder(t, shape)
	}
	return synthModel(t, s)
}
