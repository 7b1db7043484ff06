package model_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
)

// rankRef is one file of testdata/rerank, made by scripts/rerank-ref.sh
// with llama.cpp (scripts/rerank-dump.cpp).
type rankRef struct {
	Shape string `json:"shape"`
	Type  string `json:"type"`
	Seed  uint64 `json:"seed"`
	Pairs []struct {
		Query    string    `json:"query"`
		Document string    `json:"document"`
		Tokens   []int32   `json:"tokens"`
		Scores   []float32 `json:"scores"`
		Pooled   []float32 `json:"pooled"`
	} `json:"pairs"`
}

// rankVocabs are the vocabularies scripts/rerank-ref.sh gives each shape.
var rankVocabs = map[string]string{
	"bge-reranker-tiny":   "vocab/ggml-vocab-bert-bge.gguf",
	"qwen3-reranker-tiny": "stories260K.gguf",
}

// synthReranker writes shape (a reranker) as scripts/rerank-ref.sh does
// (F16, seed 1, its vocabulary) and opens it with its tokenizer.
func synthReranker(t *testing.T, shape string) *model.Model {
	t.Helper()
	return reftest.Open(t, synthtest.Write(t, shape, "F16", rankVocabs[shape], 1))
}

// rankScores scores each sequence: pooled as the reranker says, each whole
// in one step, then the classification head. It returns the pooled states
// too.
func rankScores(t *testing.T, m *model.Model, seqs [][]int32) (scores []float32, pooled [][]float32) {
	t.Helper()
	pooled = embedAll(t, m, seqs, m.RankPooling(), -1, 0)
	scores = make([]float32, len(seqs))
	for i, p := range pooled {
		s, err := m.RankScore(p)
		if err != nil {
			t.Fatal(err)
		}
		scores[i] = s
	}
	return scores, pooled
}

// rankTolerance is the largest difference from llama.cpp's score a score
// may have: 1e-3, or 1e-3 of the score's size when that is larger. (The
// pooled states are held to the embeddings' bound, cosine >= 0.9999; a
// Qwen3-Reranker's P(yes) moves by up to 6e-4 within it on the tiny shape.)
func rankTolerance(ref float32) float64 { return 1e-3 * max(1, math.Abs(float64(ref))) }

// TestRerankParity checks the reranker's prompt tokens (llama-server's
// format_prompt_rerank) and scores against llama.cpp's (testdata/rerank).
func TestRerankParity(t *testing.T) {
	forEachRef(t, "rerank", "rerank-ref.sh", func(t *testing.T, ref *rankRef) {
		if ref.Type != "F16" || ref.Seed != 1 {
			t.Fatalf("reference of %s seed %d: this test synthesizes F16 seed 1", ref.Type, ref.Seed)
		}
		m := synthReranker(t, ref.Shape)
		var seqs [][]int32
		for i, p := range ref.Pairs {
			toks, err := m.RankTokens(m.Tokenizer, p.Query, p.Document)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(toks, p.Tokens) {
				t.Errorf("pair %d: tokens\n%v\nllama.cpp's\n%v", i, toks, p.Tokens)
			}
			seqs = append(seqs, p.Tokens)
		}
		got, pooled := rankScores(t, m, seqs)
		worst, worstCos := 0.0, 1.0
		for i, p := range ref.Pairs {
			if cos := reftest.Cosine(pooled[i], p.Pooled); !(cos >= 0.9999) {
				t.Errorf("pair %d: pooled state's cosine %.7f with llama.cpp's, want >= 0.9999", i, cos)
			} else {
				worstCos = min(worstCos, cos)
			}
			d := math.Abs(float64(got[i] - p.Scores[0]))
			worst = max(worst, d)
			if !(d <= rankTolerance(p.Scores[0])) {
				t.Errorf("pair %d (%q, %q): score %.7f, llama.cpp %.7f (diff %.2g)", i, p.Query, p.Document, got[i], p.Scores[0], d)
			}
		}
		t.Logf("%d pairs, lowest pooled cosine %.7f, largest score difference %.3g", len(ref.Pairs), worstCos, worst)
	})
}

// TestRerankNotReranker checks that a model without rank pooling says so.
func TestRerankNotReranker(t *testing.T) {
	m := reftest.Open(t, testmodels.Path(t, "stories260K.gguf"))
	if err := m.Reranker(); !errors.Is(err, model.ErrNotReranker) {
		t.Fatalf("Reranker() = %v, want ErrNotReranker", err)
	}
	if _, err := m.RankScore(make([]float32, m.Config.Dim)); !errors.Is(err, model.ErrNotReranker) {
		t.Fatalf("RankScore = %v, want ErrNotReranker", err)
	}
	if _, err := m.RankTokens(m.Tokenizer, "q", "d"); !errors.Is(err, model.ErrNotReranker) {
		t.Fatalf("RankTokens = %v, want ErrNotReranker", err)
	}
}

// TestRerankEmbedRefused checks that a reranker refuses embeddings.
func TestRerankEmbedRefused(t *testing.T) {
	m := synthReranker(t, "bge-reranker-tiny")
	if _, err := m.EmbedPooling(model.PoolingNone); err == nil || !strings.Contains(err.Error(), "reranker") {
		t.Fatalf("EmbedPooling = %v, want an error naming the reranker", err)
	}
}
