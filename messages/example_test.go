package messages_test

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/troupe-llm/troupe/messages"
)

// A request is plain data: the same value is passed to actors.Runtime in
// process and crosses the cluster's wire as msgpack.
func ExampleGenerateRequest() {
	req := &messages.GenerateRequest{
		Prompt:    []int32{1, 15043, 3186},
		MaxTokens: 32,
		N:         2,
		Stop:      []string{"\n\n"},
		Sampling:  messages.SamplingParams{Temperature: 0.7, TopP: 0.9, Seed: 42, HasSeed: true},
	}
	b, err := msgpack.Marshal(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	var back messages.GenerateRequest
	if err := msgpack.Unmarshal(b, &back); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%v %d %d %q %.1f %d\n", back.Prompt, back.MaxTokens, back.N, back.Stop, back.Sampling.Temperature, back.Sampling.Seed)
	// Output:
	// [1 15043 3186] 32 2 ["\n\n"] 0.7 42
}
