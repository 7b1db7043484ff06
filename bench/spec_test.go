package bench_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/bench"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// quotePrompts are n prompts that quote text back: a reference prompt, its
// greedy continuation, then the prompt again, so the model's next tokens
// repeat what the prompt holds (where the n-gram proposer is right).
func quotePrompts(t testing.TB, reference string, n int) [][]int32 {
	cases := testmodels.Cases(t, reference)
	var ps [][]int32
	for i := range n {
		c := cases[i%len(cases)]
		ps = append(ps, slices.Concat(c.PromptIDs, c.GreedyIDs, c.PromptIDs))
	}
	return ps
}

var ngram = actors.SpecConfig{Type: actors.SpecNGram, DraftMax: 8}

// TestSpeculativeBench: the measurement adds up (every token counted, no
// more accepted than drafted, drafts accepted on prompts that quote back),
// and without speculation nothing is drafted. No timing is checked.
func TestSpeculativeBench(t *testing.T) {
	m := openModel(t, "stories260K.gguf")
	prompts := quotePrompts(t, "stories260K", 2)
	for _, on := range []bool{false, true} {
		o := bench.SpecOptions{Prompts: prompts, MaxTokens: 24}
		if on {
			o.Spec = ngram
		}
		r, err := bench.Speculative(context.Background(), m, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Tokens != 2*24 || r.Elapsed <= 0 || r.Steps < 1 {
			t.Errorf("spec %v: %d tokens in %v, %d steps", on, r.Tokens, r.Elapsed, r.Steps)
		}
		switch {
		case !on && (r.Drafts != 0 || r.DraftTokens != 0):
			t.Errorf("speculation off: %d drafts", r.Drafts)
		case on && (r.Accepted == 0 || r.Accepted > r.DraftTokens || r.MeanAcceptedLength() <= 1):
			t.Errorf("speculation on: %d of %d draft tokens accepted, mean length %.2f", r.Accepted, r.DraftTokens, r.MeanAcceptedLength())
		}
	}
}

// BenchmarkSpeculative: tokens/s with and without the n-gram proposer on
// prompts that quote text back, at batch 1 and 16 (past --spec-max-seqs,
// where the runtime stops drafting, and with drafting forced on), with the
// acceptance rate and mean accepted length.
func BenchmarkSpeculative(b *testing.B) {
	models := []struct{ path, reference string }{
		{"stories260K.gguf", "stories260K"},
		{"TinyStories-656K-Q8_0.gguf", "TinyStories-656K-Q8_0"},
		{"synthetic-more/synth-llama-hd64-F16.gguf", "synth-llama-hd64-F16"}, // random weights, 20 MB: past the caches
	}
	forced := ngram
	forced.MaxSeqs = -1
	modes := []struct {
		name string
		spec actors.SpecConfig
	}{{"off", actors.SpecConfig{}}, {"ngram", ngram}, {"ngram-always", forced}}
	for _, bm := range models {
		m := openModel(b, bm.path)
		for _, batch := range []int{1, 16} {
			prompts := quotePrompts(b, bm.reference, batch)
			for _, mode := range modes {
				if batch == 1 && mode.name == "ngram-always" {
					continue
				}
				b.Run(fmt.Sprintf("%s/b%d/%s", bm.reference, batch, mode.name), func(b *testing.B) {
					var sum bench.SpecResult
					var elapsed time.Duration
					for b.Loop() {
						r, err := bench.Speculative(context.Background(), m, bench.SpecOptions{Prompts: prompts, MaxTokens: 96, Spec: mode.spec})
						if err != nil {
							b.Fatal(err)
						}
						sum.Tokens += r.Tokens
						elapsed += r.Elapsed
						sum.Drafts += r.Drafts
						sum.DraftTokens += r.DraftTokens
						sum.Accepted += r.Accepted
					}
					b.ReportMetric(float64(sum.Tokens)/elapsed.Seconds(), "tok/s")
					b.ReportMetric(sum.AcceptanceRate(), "accept-rate")
					b.ReportMetric(sum.MeanAcceptedLength(), "mean-accepted-len")
				})
			}
		}
	}
}
