package sample

import (
	"math"
	"slices"
	"testing"
)

// TestAdjust checks logit bias and the penalties on a crafted vocabulary
// against numbers worked out by hand (all exact in binary floating point).
func TestAdjust(t *testing.T) {
	ninf := float32(math.Inf(-1))
	logits := []float32{2, -1, 0, 3, 1.5}
	history := []int32{0, 1, 2, 0, 4, 4, 4} // counts: 0:2 1:1 2:1 3:0 4:3
	tests := []struct {
		name    string
		p       Params
		history []int32
		want    []float32
	}{
		{"nothing", Params{}, history, []float32{2, -1, 0, 3, 1.5}},
		{"repetition 2", Params{RepetitionPenalty: 2}, history, []float32{1, -2, 0, 3, 0.75}},
		{"repetition 0.5 encourages", Params{RepetitionPenalty: 0.5}, history, []float32{4, -0.5, 0, 3, 3}},
		{"presence 0.5 once per token", Params{PresencePenalty: 0.5}, history, []float32{1.5, -1.5, -0.5, 3, 1}},
		{"frequency 0.25 per occurrence", Params{FrequencyPenalty: 0.25}, history, []float32{1.5, -1.25, -0.25, 3, 0.75}},
		{"negative frequency rewards", Params{FrequencyPenalty: -0.25}, history, []float32{2.5, -0.75, 0.25, 3, 2.25}},
		{"all three", Params{RepetitionPenalty: 2, PresencePenalty: 0.5, FrequencyPenalty: 0.25}, history,
			[]float32{0, -2.75, -0.75, 3, -0.5}},
		{"last 3 tokens only", Params{FrequencyPenalty: 0.25, PenaltyLastN: 3}, history, []float32{2, -1, 0, 3, 0.75}},
		{"last 4 tokens", Params{FrequencyPenalty: 0.25, PenaltyLastN: 4}, history, []float32{1.75, -1, 0, 3, 0.75}},
		{"last n longer than history", Params{PresencePenalty: 1, PenaltyLastN: 100}, []int32{3}, []float32{2, -1, 0, 2, 1.5}},
		{"tokens outside the vocabulary are ignored", Params{PresencePenalty: 1}, []int32{-1, 5, 99}, []float32{2, -1, 0, 3, 1.5}},
		{"no history", Params{RepetitionPenalty: 2}, nil, []float32{2, -1, 0, 3, 1.5}},
		{"bias", Params{LogitBias: map[int32]float32{1: 3, 4: -0.5}}, history, []float32{2, 2, 0, 3, 1}},
		{"bias before repetition", Params{LogitBias: map[int32]float32{1: 3}, RepetitionPenalty: 2}, history,
			[]float32{1, 1, 0, 3, 0.75}},
		{"ban survives penalties", Params{LogitBias: map[int32]float32{0: ninf}, RepetitionPenalty: 2, FrequencyPenalty: -1}, history,
			[]float32{ninf, -1, 1, 3, 3.75}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, tt.p)
			in := slices.Clone(logits)
			// Twice, to check that the counts left behind are clean.
			for range 2 {
				if got := s.adjust(in, tt.history); !slices.Equal(got, tt.want) {
					t.Fatalf("adjust = %v, want %v", got, tt.want)
				}
			}
			if !slices.Equal(in, logits) {
				t.Fatalf("adjust modified its input: %v", in)
			}
		})
	}
}
