package actors_test

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// Start troupe inside the application's own actor system and stream a
// completion through a channel.
func Example() {
	system := actor.NewActorSystem() // the application's
	defer system.Shutdown()

	m, err := model.Open(filepath.Join(testmodels.Lookup(), "stories260K.gguf"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	rt, err := actors.Start(system, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCPU)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Stop(5 * time.Second)

	prompt, _ := rt.Tokenize("Once upon a time")
	ch, err := rt.Stream(context.Background(), &messages.GenerateRequest{Prompt: prompt, MaxTokens: 16})
	if err != nil {
		fmt.Println(err)
		return
	}
	for c := range ch {
		fmt.Print(c.Text)
		if c.Done {
			fmt.Printf("\n%d prompt tokens, %d generated\n", c.Usage.PromptTokens, c.Usage.CompletionTokens)
		}
	}
	// Output:
	// , there was a little girl named Lily. She loved to play
	// 5 prompt tokens, 16 generated
}

// Generate calls back with each chunk in the caller's goroutine; returning an
// error, or cancelling the context, cancels the request and frees its KV
// blocks at once. Here two choices are sampled with a fixed seed and the
// callback stops after six tokens.
func ExampleRuntime_Generate() {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	m, err := model.Open(filepath.Join(testmodels.Lookup(), "stories260K.gguf"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	rt, err := actors.Start(system, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCPU)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Stop(5 * time.Second)

	prompt, _ := rt.Tokenize("Once upon a time")
	req := &messages.GenerateRequest{Prompt: prompt, N: 2, MaxTokens: 64, Stop: []string{"."},
		Sampling: messages.SamplingParams{Temperature: 0.8, TopK: 40, Seed: 7, HasSeed: true}}
	generated := 0
	enough := fmt.Errorf("enough")
	_, err = rt.Generate(context.Background(), req, func(c *messages.OutputChunk) error {
		generated += len(c.Tokens)
		if generated >= 6 {
			return enough
		}
		return nil
	})
	fmt.Println(err, generated >= 6)
	// Output:
	// enough true
}
