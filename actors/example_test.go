package actors_test

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/internal/tinytest"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// tinyModel opens troupetest's tiny random model from a file in a new
// folder and returns it with its closing (which removes the folder). A real
// program opens its own GGUF file with model.Open instead.
func tinyModel() (*model.Model, func(), error) { return tinytest.Open(model.Open) }

// Start troupe inside the application's own actor system and stream a
// completion through a channel. (A program without an actor system of its
// own uses package troupe's Open instead.)
func Example() {
	m, closeModel, err := tinyModel()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeModel()

	system := actor.NewActorSystem() // the application's
	defer system.Shutdown()
	rt, err := actors.Start(system, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCPU)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Stop(5 * time.Second)

	prompt, _ := rt.Tokenize("Once upon a time")
	ch, err := rt.Stream(context.Background(), &messages.GenerateRequest{Prompt: prompt, MaxTokens: 16, IgnoreEOS: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for c := range ch {
		// c.Text is the next piece of text (the tiny model's is meaningless,
		// so this example does not print it).
		if c.Done {
			fmt.Printf("%d prompt tokens, %d generated\n", c.Usage.PromptTokens, c.Usage.CompletionTokens)
		}
	}
	// Output:
	// 16 prompt tokens, 16 generated
}

// Generate calls back with each chunk in the caller's goroutine; returning an
// error, or cancelling the context, cancels the request and frees its KV
// blocks at once. Here two choices are sampled with a fixed seed and the
// callback stops after six tokens.
func ExampleRuntime_Generate() {
	m, closeModel, err := tinyModel()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeModel()
	system := actor.NewActorSystem()
	defer system.Shutdown()
	rt, err := actors.Start(system, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCPU)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Stop(5 * time.Second)

	prompt, _ := rt.Tokenize("Once upon a time")
	req := &messages.GenerateRequest{Prompt: prompt, N: 2, MaxTokens: 64, IgnoreEOS: true,
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
