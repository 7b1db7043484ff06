package sample_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/model/sample"
)

func newSampler(t testing.TB, p sample.Params) *sample.Sampler {
	t.Helper()
	s, err := sample.New(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustSample(t testing.TB, s *sample.Sampler, logits []float32, history []int32) sample.Token {
	t.Helper()
	tok, err := s.Sample(logits, history)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func randomLogits(rng *rand.Rand, n int, scale float64) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(rng.NormFloat64() * scale)
	}
	return l
}

func TestGreedyIsArgmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	tests := []struct {
		name string
		p    sample.Params
	}{
		{"zero value", sample.Params{}},
		{"negative temperature", sample.Params{Temperature: -1}},
		{"truncation ignored when greedy", sample.Params{TopK: 5, TopP: 0.5, MinP: 0.3, Seed: 9, HasSeed: true}},
		{"with logprobs", sample.Params{WantLogprob: true, Logprobs: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSampler(t, tt.p)
			for range 200 {
				logits := randomLogits(rng, 1000, 2)
				if got, want := mustSample(t, s, logits, nil).ID, sample.Argmax(logits); got != want {
					t.Fatalf("Sample = %d, want argmax %d", got, want)
				}
			}
		})
	}
}

func TestGreedyTies(t *testing.T) {
	tests := []struct {
		name   string
		logits []float32
		want   int32
	}{
		{"two-way tie", []float32{1, 4, 4, 2}, 1},
		{"all equal", []float32{0, 0, 0}, 0},
		{"tie at the end", []float32{-1, 3, -1, 3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustSample(t, newSampler(t, sample.Params{}), tt.logits, nil).ID; got != tt.want {
				t.Fatalf("Sample = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLogitBias(t *testing.T) {
	ninf := float32(math.Inf(-1))
	logits := []float32{1, 5, 3, 2}
	tests := []struct {
		name string
		bias map[int32]float32
		want int32
	}{
		{"none", nil, 1},
		{"ban the argmax", map[int32]float32{1: ninf}, 2},
		{"ban the top two", map[int32]float32{1: ninf, 2: ninf}, 3},
		{"push down", map[int32]float32{1: -2.5}, 2},
		{"promote", map[int32]float32{0: 4.5}, 0},
		{"promote to a tie", map[int32]float32{3: 3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, temp := range []float32{0, 1} {
				// With temperature 1 and top-k 1, the same token comes out.
				s := newSampler(t, sample.Params{Temperature: temp, TopK: 1, LogitBias: tt.bias})
				if got := mustSample(t, s, logits, nil).ID; got != tt.want {
					t.Fatalf("temperature %v: Sample = %d, want %d", temp, got, tt.want)
				}
			}
		})
	}
}

func TestBiasMapCopied(t *testing.T) {
	bias := map[int32]float32{1: float32(math.Inf(-1))}
	s := newSampler(t, sample.Params{LogitBias: bias})
	delete(bias, 1)
	if got := mustSample(t, s, []float32{0, 9}, nil).ID; got != 0 {
		t.Fatalf("Sample = %d after the caller changed its map, want 0", got)
	}
}

func TestPenaltiesChangeTheChoice(t *testing.T) {
	logits := []float32{2, 1.8, 0}
	history := []int32{0, 0, 2}
	tests := []struct {
		name string
		p    sample.Params
		want int32
	}{
		{"no penalty", sample.Params{}, 0},
		{"repetition 1.2", sample.Params{RepetitionPenalty: 1.2}, 1}, // 2/1.2 = 1.67
		{"presence 0.3", sample.Params{PresencePenalty: 0.3}, 1},     // 1.7
		{"frequency 0.15", sample.Params{FrequencyPenalty: 0.15}, 1}, // 2 - 0.3 = 1.7
		{"frequency 0.05", sample.Params{FrequencyPenalty: 0.05}, 0}, // 1.9
		{"window misses token 0", sample.Params{PresencePenalty: 1, PenaltyLastN: 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustSample(t, newSampler(t, tt.p), logits, history).ID; got != tt.want {
				t.Fatalf("Sample = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSampleErrors(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name   string
		p      sample.Params
		logits []float32
		want   error
	}{
		{"empty", sample.Params{}, nil, sample.ErrBadLogits},
		{"NaN", sample.Params{Temperature: 1}, []float32{0, nan, 1}, sample.ErrBadLogits},
		{"NaN first", sample.Params{}, []float32{nan, 0}, sample.ErrBadLogits},
		{"+Inf", sample.Params{}, []float32{0, inf}, sample.ErrBadLogits},
		{"all banned", sample.Params{LogitBias: map[int32]float32{0: -inf, 1: -inf}}, []float32{0, 1}, sample.ErrNoCandidates},
		{"all -Inf", sample.Params{Temperature: 1}, []float32{-inf, -inf}, sample.ErrNoCandidates},
		{"bias past the vocabulary", sample.Params{LogitBias: map[int32]float32{2: 1}}, []float32{0, 1}, sample.ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := newSampler(t, tt.p).Sample(tt.logits, nil); !errors.Is(err, tt.want) {
				t.Fatalf("Sample error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestInputsNotModified(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	logits := randomLogits(rng, 2000, 1)
	history := []int32{5, 7, 5, 1999, 3}
	l, h := slices.Clone(logits), slices.Clone(history)
	p := sample.Params{Temperature: 0.8, TopP: 0.9, MinP: 0.01, RepetitionPenalty: 1.3, FrequencyPenalty: 0.2,
		LogitBias: map[int32]float32{0: 5}, Logprobs: 4}
	s := newSampler(t, p)
	for range 3 {
		mustSample(t, s, logits, history)
	}
	if !slices.Equal(l, logits) || !slices.Equal(h, history) {
		t.Fatal("Sample modified its inputs")
	}
}

func TestNoAllocations(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	logits := randomLogits(rng, 5000, 1)
	history := make([]int32, 300)
	for i := range history {
		history[i] = rng.Int32N(5000)
	}
	tests := []struct {
		name string
		p    sample.Params
	}{
		{"greedy", sample.Params{}},
		{"greedy with logprobs", sample.Params{Logprobs: 5}},
		{"top-k top-p temperature", sample.Params{Temperature: 0.8, TopK: 40, TopP: 0.95}},
		{"top-p alone", sample.Params{Temperature: 0.8, TopP: 0.95}},
		{"min-p alone", sample.Params{Temperature: 0.8, MinP: 0.05}},
		{"temperature alone", sample.Params{Temperature: 1}},
		{"everything", sample.Params{Temperature: 0.8, TopK: 100, TopP: 0.9, MinP: 0.01,
			RepetitionPenalty: 1.1, PresencePenalty: 0.5, FrequencyPenalty: 0.5, PenaltyLastN: 64,
			LogitBias: map[int32]float32{3: -100, 40: 2}, Logprobs: 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSampler(t, tt.p)
			mustSample(t, s, logits, history)
			if n := testing.AllocsPerRun(50, func() { mustSample(t, s, logits, history) }); n != 0 {
				t.Fatalf("%v allocations per Sample", n)
			}
		})
	}
}
