package sample_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/model/sample"
)

func TestTopKOneIsGreedy(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, temp := range []float32{0.01, 0.7, 1, 5, 1000} {
		s := newSampler(t, sample.Params{Temperature: temp, TopK: 1, Seed: 1, HasSeed: true})
		for range 100 {
			logits := randomLogits(rng, 500, 1)
			if got, want := mustSample(t, s, logits, nil).ID, sample.Argmax(logits); got != want {
				t.Fatalf("temperature %v: Sample = %d, want %d", temp, got, want)
			}
		}
	}
}

func TestTemperatureToZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, temp := range []float32{1e-2, 1e-4, 1e-8, 1e-30, 1e-45} {
		s := newSampler(t, sample.Params{Temperature: temp, Seed: 2, HasSeed: true})
		for range 100 {
			logits := randomLogits(rng, 300, 1)
			want := sample.Argmax(logits)
			// Make the margin at least 0.5, so e^(-0.5/T) is negligible.
			for i := range logits {
				if int32(i) != want {
					logits[i] = min(logits[i], logits[want]-0.5)
				}
			}
			if got := mustSample(t, s, logits, nil).ID; got != want {
				t.Fatalf("temperature %v: Sample = %d, want %d", temp, got, want)
			}
		}
	}
}

func draws(t *testing.T, p sample.Params, logits []float32, n int) []int32 {
	t.Helper()
	s := newSampler(t, p)
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = mustSample(t, s, logits, nil).ID
	}
	return ids
}

func TestSeedDeterminism(t *testing.T) {
	logits := randomLogits(rand.New(rand.NewPCG(4, 4)), 1000, 1)
	p := sample.Params{Temperature: 1, TopK: 40, TopP: 0.95, Seed: 42, HasSeed: true}
	a, b := draws(t, p, logits, 100), draws(t, p, logits, 100)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different draws:\n%v\n%v", a, b)
	}
	p.Seed = 43
	if c := draws(t, p, logits, 100); slices.Equal(a, c) {
		t.Fatalf("seeds 42 and 43 gave the same 100 draws")
	}
	p.HasSeed = false
	if d, e := draws(t, p, logits, 100), draws(t, p, logits, 100); slices.Equal(d, e) {
		t.Fatalf("two unseeded samplers gave the same 100 draws")
	}
}

// TestDistribution checks that draws follow the softmax of the (truncated,
// tempered) logits with Pearson's chi-square statistic. The seed is fixed, so
// the test is deterministic; the bound is p ≈ 1e-5 for 3 degrees of freedom,
// so a correct sampler passes for almost any seed.
func TestDistribution(t *testing.T) {
	logits := []float32{1, 0.5, 0, -1}
	tests := []struct {
		name string
		p    sample.Params
		want []float64 // probabilities
	}{
		{"temperature 1", sample.Params{Temperature: 1}, softmax(logits, 1)},
		{"temperature 0.5", sample.Params{Temperature: 0.5}, softmax(logits, 0.5)},
		{"temperature 3", sample.Params{Temperature: 3}, softmax(logits, 3)},
		{"top-k 3", sample.Params{Temperature: 1, TopK: 3}, softmax(logits[:3], 1)},
		{"top-p 0.6 then temperature 2", sample.Params{Temperature: 2, TopP: 0.6}, softmax(logits[:2], 2)},
	}
	const n = 40000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Seed, tt.p.HasSeed = 7, true
			count := make([]float64, len(logits))
			for _, id := range draws(t, tt.p, logits, n) {
				count[id]++
			}
			var chi2 float64
			for i, c := range count {
				want := 0.0
				if i < len(tt.want) {
					want = tt.want[i] * n
				}
				if want == 0 {
					if c != 0 {
						t.Fatalf("token %d drawn %v times, want never", i, c)
					}
					continue
				}
				chi2 += (c - want) * (c - want) / want
			}
			if chi2 > 25 {
				t.Fatalf("chi-square %.1f > 25: counts %v, want probabilities %v", chi2, count, tt.want)
			}
			t.Logf("chi-square %.2f", chi2)
		})
	}
}

func softmax(logits []float32, temp float64) []float64 {
	p := make([]float64, len(logits))
	var sum float64
	for i, x := range logits {
		p[i] = math.Exp(float64(x) / temp)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}
