package sample_test

import (
	"math"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/model/sample"
)

func TestLogprobs(t *testing.T) {
	logits := []float32{0.5, 2, -1, 2, 0, 1.25, -3, 0.75}
	want := make([]float32, len(logits))
	sample.LogSoftmax(want, logits)

	t.Run("chosen only", func(t *testing.T) {
		tok := mustSample(t, newSampler(t, sample.Params{WantLogprob: true}), logits, nil)
		if tok.ID != 1 || tok.Logprob != want[1] || tok.Top != nil {
			t.Fatalf("got %+v, want id 1, logprob %v, no top", tok, want[1])
		}
	})
	t.Run("none asked", func(t *testing.T) {
		tok := mustSample(t, newSampler(t, sample.Params{Temperature: 1, Seed: 1, HasSeed: true}), logits, nil)
		if tok.Logprob != 0 || tok.Top != nil {
			t.Fatalf("got %+v, want no logprobs", tok)
		}
	})
	t.Run("whole vocabulary", func(t *testing.T) {
		s := newSampler(t, sample.Params{Temperature: 1, TopK: 2, Logprobs: len(logits), Seed: 3, HasSeed: true})
		for range 20 {
			tok := mustSample(t, s, logits, nil)
			if len(tok.Top) != len(logits) {
				t.Fatalf("%d top logprobs, want %d", len(tok.Top), len(logits))
			}
			var sum float64
			for i, tl := range tok.Top {
				sum += math.Exp(float64(tl.Logprob))
				if tl.Logprob != want[tl.ID] {
					t.Errorf("top[%d] = %+v, want logprob %v", i, tl, want[tl.ID])
				}
				if i > 0 && tok.Top[i-1].Logprob < tl.Logprob {
					t.Errorf("top not sorted: %+v", tok.Top)
				}
			}
			if math.Abs(sum-1) > 1e-6 {
				t.Errorf("probabilities sum to %v", sum)
			}
			// Reported before truncation and temperature.
			if tok.Logprob != want[tok.ID] {
				t.Errorf("chosen %d: logprob %v, want %v", tok.ID, tok.Logprob, want[tok.ID])
			}
		}
	})
	t.Run("top 3 with ties", func(t *testing.T) {
		tok := mustSample(t, newSampler(t, sample.Params{Logprobs: 3}), logits, nil)
		wantTop := []sample.TokenLogprob{{1, want[1]}, {3, want[3]}, {5, want[5]}}
		if !slices.Equal(tok.Top, wantTop) || tok.Logprob != want[1] {
			t.Fatalf("got %+v, want top %v and logprob %v", tok, wantTop, want[1])
		}
	})
	t.Run("after bias and penalties", func(t *testing.T) {
		p := sample.Params{Logprobs: 2, LogitBias: map[int32]float32{1: -1}, PresencePenalty: 0.5}
		adjusted := slices.Clone(logits)
		adjusted[1] -= 1.5
		adjusted[6] -= 0.5
		wantAdj := make([]float32, len(adjusted))
		sample.LogSoftmax(wantAdj, adjusted)
		tok := mustSample(t, newSampler(t, p), logits, []int32{6, 1})
		wantTop := []sample.TokenLogprob{{3, wantAdj[3]}, {5, wantAdj[5]}}
		if tok.ID != 3 || !slices.Equal(tok.Top, wantTop) || tok.Logprob != wantAdj[3] {
			t.Fatalf("got %+v, want id 3, top %v", tok, wantTop)
		}
	})
	t.Run("more asked than the vocabulary", func(t *testing.T) {
		tok := mustSample(t, newSampler(t, sample.Params{Logprobs: 5}), logits[:3], nil)
		if len(tok.Top) != 3 {
			t.Fatalf("%d top logprobs, want 3", len(tok.Top))
		}
	})
}
