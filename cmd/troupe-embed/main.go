// Command troupe-embed is a small Go application that embeds troupe: it
// runs its own protoactor actor system with an actor of its own (a printer
// that writes what it is sent), starts the troupe runtime inside that same
// system, and streams a completion to the printer. Ctrl-C cancels the
// request; its KV blocks are freed at once.
//
//	troupe-embed -m model.gguf -p "Once upon a time" -n 64
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// printer is the application's own actor: it writes each text it receives.
type printer struct{ w io.Writer }

func (p *printer) Receive(ctx actor.Context) {
	if s, ok := ctx.Message().(string); ok {
		fmt.Fprint(p.w, s)
	}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "troupe-embed:", err)
		os.Exit(1)
	}
}

func run() error {
	path := flag.String("m", "", "model: a GGUF file or a safetensors directory (required)")
	prompt := flag.String("p", "Once upon a time", "prompt")
	n := flag.Int("n", 64, "tokens to generate at most")
	temp := flag.Float64("temp", 0, "temperature (0: greedy)")
	flag.Parse()
	if *path == "" {
		flag.Usage()
		os.Exit(2)
	}

	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}))
	defer system.Shutdown()
	out := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &printer{w: os.Stdout} }))

	m, err := model.Open(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	rt, err := actors.Start(system, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCPU)})
	if err != nil {
		return err
	}
	defer rt.Stop(5 * time.Second)

	ids, err := rt.Tokenize(*prompt)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	req := &messages.GenerateRequest{Prompt: ids, MaxTokens: *n,
		Sampling: messages.SamplingParams{Temperature: float32(*temp)}}
	usage, err := rt.Generate(ctx, req, func(c *messages.OutputChunk) error {
		system.Root.Send(out, c.Text)
		return nil
	})
	if err != nil {
		return err
	}
	// Poison the printer and wait, so its last texts are written first.
	if err := system.Root.PoisonFuture(out).Wait(); err != nil {
		return err
	}
	fmt.Printf("\n[%d prompt tokens, %d generated]\n", usage.PromptTokens, usage.CompletionTokens)
	return nil
}
