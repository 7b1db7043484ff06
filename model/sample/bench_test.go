package sample_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/troupe-llm/troupe/model/sample"
)

// BenchmarkSample samples one decode token from random logits (standard
// deviation 3) over Llama-2 (32000) and Qwen2 (151936) vocabularies.
func BenchmarkSample(b *testing.B) {
	configs := []struct {
		name string
		p    sample.Params
	}{
		{"greedy", sample.Params{}},
		{"topk40-topp0.95-temp0.8", sample.Params{Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: 1, HasSeed: true}},
		{"topp0.95-temp0.8", sample.Params{Temperature: 0.8, TopP: 0.95, Seed: 1, HasSeed: true}},
		{"minp0.05-temp0.8", sample.Params{Temperature: 0.8, MinP: 0.05, Seed: 1, HasSeed: true}},
		{"greedy-penalties-logprobs5", sample.Params{RepetitionPenalty: 1.1, PenaltyLastN: 64, Logprobs: 5}},
	}
	for _, vocab := range []int{32000, 151936} {
		rng := rand.New(rand.NewPCG(uint64(vocab), 0))
		logits := randomLogits(rng, vocab, 3)
		history := make([]int32, 512)
		for i := range history {
			history[i] = rng.Int32N(int32(vocab))
		}
		for _, c := range configs {
			b.Run(fmt.Sprintf("vocab=%d/%s", vocab, c.name), func(b *testing.B) {
				s := newSampler(b, c.p)
				for b.Loop() {
					if _, err := s.Sample(logits, history); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}
