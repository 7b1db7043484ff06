package sample

import (
	"math"
	"slices"
	"testing"
)

// TestDry checks DRY on llama.cpp's own cases (tests/test-sampling.cpp,
// test_dry: probabilities after the penalty and a softmax) and one worked
// out by hand.
func TestDry(t *testing.T) {
	tests := []struct {
		name     string
		probs    []float32
		history  []int32
		want     []float32
		mult     float32
		base     float32
		allowed  int
		lastN    int
		breakers [][]int32
	}{
		{"too short", []float32{0.25, 0.25, 0.25, 0.25}, []int32{0, 1}, []float32{0.25, 0.25, 0.25, 0.25}, 1, 1.1, 2, 4, nil},
		{"repeat of 2", []float32{0.25, 0.25, 0.25, 0.25}, []int32{0, 1, 2, 0, 1}, []float32{0.296923, 0.296923, 0.109232, 0.296923}, 1, 1.1, 2, 5, nil},
		{"breaker", []float32{0.2, 0.2, 0.2, 0.2, 0.2}, []int32{0, 1, 3, 4, 0, 1}, []float32{0.2, 0.2, 0.2, 0.2, 0.2}, 1, 1.1, 2, 6, [][]int32{{3}}},
		{"multiplier 2", []float32{0.2, 0.2, 0.2, 0.2, 0.2}, []int32{0, 1, 2, 0, 1}, []float32{0.241818, 0.241818, 0.032727, 0.241818, 0.241818}, 2, 1.1, 2, 5, nil},
		{"allowed 4", []float32{0.2, 0.2, 0.2, 0.2, 0.2}, []int32{0, 1, 2, 3, 4, 0, 1}, []float32{0.2, 0.2, 0.2, 0.2, 0.2}, 1, 1.1, 4, 7, nil},
		// By hand: "0 1 2" repeats, so 3 extends a run of 3: penalty
		// 1 * 2^(3-2) = 2 on token 3's logit; 1 and 2 extend nothing.
		{"run of 3", []float32{0.25, 0.25, 0.25, 0.25}, []int32{0, 1, 2, 3, 0, 1, 2}, softmaxOf(0, 0, 0, -2), 1, 2, 2, 7, nil},
		// The window (last 4: 3 0 1 2) no longer holds the earlier run.
		{"window", []float32{0.25, 0.25, 0.25, 0.25}, []int32{0, 1, 2, 3, 0, 1, 2}, []float32{0.25, 0.25, 0.25, 0.25}, 1, 2, 2, 4, nil},
		// A breaker token (2) in the run limits it to the tokens after it.
		{"breaker in run", []float32{0.25, 0.25, 0.25, 0.25}, []int32{0, 1, 2, 3, 0, 1, 2}, []float32{0.25, 0.25, 0.25, 0.25}, 1, 2, 2, 7, [][]int32{{2}}},
		// A two-token breaker "1 2" (head 1, then 2) also ends it.
		{"two-token breaker", []float32{0.25, 0.25, 0.25, 0.25}, []int32{0, 1, 2, 3, 0, 1, 2}, []float32{0.25, 0.25, 0.25, 0.25}, 1, 2, 2, 7, [][]int32{{1, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, Params{Temperature: 1, DryMultiplier: tt.mult, DryBase: tt.base, DryAllowedLength: tt.allowed,
				DryPenaltyLastN: tt.lastN, DryBreakers: tt.breakers})
			l := slices.Clone(s.adjust(logitsOf(tt.probs), tt.history))
			LogSoftmax(l, l)
			for i := range l {
				if got := float32(math.Exp(float64(l[i]))); math.Abs(float64(got-tt.want[i])) > 1e-5 {
					t.Errorf("p[%d] = %v, want %v", i, got, tt.want[i])
				}
			}
		})
	}
}

// softmaxOf returns the softmax of logits.
func softmaxOf(logits ...float32) []float32 {
	out := slices.Clone(logits)
	LogSoftmax(out, out)
	for i := range out {
		out[i] = float32(math.Exp(float64(out[i])))
	}
	return out
}

// TestDryBreakerSequences checks the breaker processing on a tiny
// vocabulary: a token containing the breaker is a single-token breaker, a
// token ending with its start is a head followed by the rest's tokens.
func TestDryBreakerSequences(t *testing.T) {
	vocab := []string{"a", "b:", "x\n", "ab", "c", "\n", "b"}
	encode := func(s string) []int32 {
		var ids []int32
		for _, r := range s {
			ids = append(ids, int32(slices.Index(vocab, string(r))))
		}
		return ids
	}
	piece := func(id int32) string { return vocab[id] }
	got := DryBreakerSequences([]string{"\n", "abc", ""}, len(vocab), piece, encode)
	// "\n": in "x\n" and "\n". "abc": "a" ends with "a" (rest "bc": b c),
	// "ab" ends with "ab" (rest "c").
	want := [][]int32{{2}, {5}, {0, 6, 4}, {3, 4}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("sequence %d = %v, want %v", i, got[i], want[i])
		}
	}
}
