package sample

import (
	"math"
	"testing"
)

// TestArgmaxParams: Argmax holds exactly when Sample is the plain argmax.
func TestArgmaxParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Params
		want bool
	}{
		{"greedy", Params{}, true},
		{"greedy, repetition penalty 1", Params{RepetitionPenalty: 1}, true},
		{"greedy, top-k (no effect)", Params{TopK: 5}, true},
		{"temperature", Params{Temperature: 0.7}, false},
		{"logit bias", Params{LogitBias: map[int32]float32{3: -100}}, false},
		{"repetition penalty", Params{RepetitionPenalty: 1.1}, false},
		{"presence penalty", Params{PresencePenalty: 0.5}, false},
		{"frequency penalty", Params{FrequencyPenalty: -0.5}, false},
		{"logprob", Params{WantLogprob: true}, false},
		{"top logprobs", Params{Logprobs: 2}, false},
	} {
		if got := tc.p.Argmax(); got != tc.want {
			t.Errorf("%s: Argmax %v, want %v", tc.name, got, tc.want)
		}
		if !tc.want {
			continue
		}
		// Where Argmax holds, Sample is the first index of the largest logit.
		s := mustNew(t, tc.p)
		logits := []float32{1, 3, float32(math.Inf(-1)), 3, 2}
		tok, err := s.Sample(logits, []int32{1, 1, 3})
		if err != nil || tok.ID != 1 {
			t.Errorf("%s: Sample %d, %v; want 1", tc.name, tok.ID, err)
		}
	}
}
