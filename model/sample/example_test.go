package sample_test

import (
	"fmt"

	"github.com/troupe-llm/troupe/model/sample"
)

func ExampleSampler() {
	// Greedy, with token 2 banned and the two most likely alternatives
	// reported. Set Temperature (and TopK, TopP, MinP, Seed) to sample.
	s, err := sample.New(sample.Params{
		LogitBias:         map[int32]float32{2: -100},
		RepetitionPenalty: 1.5,
		Logprobs:          2,
	})
	if err != nil {
		panic(err)
	}
	logits := []float32{0.1, 2.5, 3.0, -1.0, 2.4} // one row of the model's output
	history := []int32{4, 0}                      // prompt and generated tokens
	tok, err := s.Sample(logits, history)
	if err != nil {
		panic(err)
	}
	fmt.Printf("token %d, logprob %.3f\n", tok.ID, tok.Logprob)
	for _, alt := range tok.Top {
		fmt.Printf("  %d %.3f\n", alt.ID, alt.Logprob)
	}
	// Output:
	// token 1, logprob -0.422
	//   1 -0.422
	//   4 -1.322
}
