package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

func runCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	path := fs.String("m", "", "model: a GGUF file or a safetensors directory (required)")
	prompt := fs.String("p", "", "prompt text (required)")
	n := fs.Int("n", 128, "tokens to generate at most (-1: until the context is full)")
	ctxLen := fs.Int("c", 0, "context length (0: the model's)")
	temp := fs.Float64("temp", 0.8, "temperature (0: greedy)")
	topK := fs.Int("top-k", 40, "top-k (0: off)")
	topP := fs.Float64("top-p", 0.95, "top-p (1: off)")
	minP := fs.Float64("min-p", 0.05, "min-p (0: off)")
	rep := fs.Float64("repeat-penalty", 1.0, "repetition penalty (1: off)")
	seed := fs.Int64("seed", -1, "random seed (-1: random)")
	threads := fs.Int("t", 2, "threads")
	deviceKind := fs.String("device", "auto", "device: auto (CUDA when the model loads on a GPU, else the CPU), cpu or cuda")
	output := fs.String("output", "text", "output: text (streamed) or json")
	noSpecial := fs.Bool("no-special", false, "do not add BOS/EOS or parse special tokens in the prompt")
	kvType := kvCacheTypeFlag(fs)
	repack := repackFlag(fs)
	var spec actors.SpecConfig
	var draftPath string
	specVar(fs, &spec, &draftPath)
	var adapters []loraSpec
	loraVar(fs, &adapters)
	var mmproj string
	var images []string
	mmprojVar(fs, &mmproj) // mmproj.go
	fs.Var(listFlag{&images}, "image", "image `FILE`s for the prompt (with --mmproj), comma-separated or repeated: each where the prompt has <__media__>, else before it")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkSpec(&spec, draftPath); err != nil {
		return usageError{err.Error()}
	}
	switch {
	case *path == "":
		return usageError{"-m MODEL is required"}
	case *output != "text" && *output != "json":
		return usageError{fmt.Sprintf("--output %q: want text or json", *output)}
	case *threads < 1:
		return usageError{"-t must be at least 1"}
	}
	device, err := loraDevice(*deviceKind, adapters)
	if err != nil {
		return err
	}
	if len(images) > 0 && mmproj == "" {
		return usageError{"--image needs --mmproj"}
	}
	kind, err := deviceFlag(device)
	if err != nil {
		return err
	}
	params := messages.SamplingParams{Temperature: float32(*temp), TopK: *topK, TopP: float32(*topP), MinP: float32(*minP),
		RepetitionPenalty: float32(*rep), PenaltyLastN: 64, HasSeed: *seed >= 0, Seed: uint64(*seed)}
	if err := actors.SampleParams(&params).Validate(); err != nil {
		return usageError{err.Error()}
	}
	m, err := openModelWith(*path, *repack)
	if err != nil {
		return err
	}
	defer m.Close()
	closeAdapters, err := openAdapters(m, adapters)
	if err != nil {
		return err
	}
	defer closeAdapters()
	encoder, closeProjector, err := openProjector(mmproj, m)
	if err != nil {
		return err
	}
	defer closeProjector()
	ids, err := m.Tokenizer.Encode(*prompt, !*noSpecial, !*noSpecial)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// The request goes through the actor runtime, as a server's would.
	system := newActorSystem()
	defer system.Shutdown()
	// One sequence: KV blocks for one context, not a server's pool.
	ctxTokens := *ctxLen
	if ctxTokens <= 0 {
		ctxTokens = m.Config.ContextLen
	}
	closeDraft, err := openDraft(&spec, draftPath, kind, *repack)
	if err != nil {
		return err
	}
	defer closeDraft()
	devices := backend.NewSelector(m, kind)
	rt, err := actors.Start(system, m, actors.Config{Workers: *threads, MaxModelLen: *ctxLen, Devices: 1,
		MaxNumSeqs: 1, NumBlocks: (ctxTokens + kv.DefaultBlockSize - 1) / kv.DefaultBlockSize, NewBackend: devices.New,
		KVCacheType: *kvType, Speculative: spec, Encoder: encoder})
	if err != nil {
		return err
	}
	var spans []messages.ImageInput
	if len(images) > 0 { // mmproj.go
		if ids, spans, err = imagePrompt(rt, *prompt, images, !*noSpecial); err != nil {
			rt.Stop(time.Second)
			return err
		}
	}
	defer rt.Stop(5 * time.Second)
	if err := devices.Fallback(); err != nil && !errors.Is(err, cuda.ErrNoDriver) { // a GPU, unusable: say so
		fmt.Fprintf(stderr, "troupe: --device auto: running on the CPU: %s\n", fallbackWhy(err))
	}
	if msg := encoderPlacement(encoder, rt.Device()); msg != "" { // mmproj.go
		fmt.Fprintln(stderr, "troupe: "+msg)
	}
	req := &messages.GenerateRequest{Prompt: ids, MaxTokens: max(*n, 0), Sampling: params, Images: spans}
	ch, err := rt.Stream(ctx, req)
	if err != nil {
		return err
	}
	out := []int32{}
	var text strings.Builder
	var failure error
	for c := range ch {
		for _, t := range c.Tokens {
			out = append(out, t.ID)
		}
		if c.Err != "" && c.FinishReason == messages.FinishError {
			failure = errors.New(c.Err)
		}
		if *output == "text" {
			if _, err := io.WriteString(stdout, c.Text); err != nil && failure == nil {
				failure = err
				stop() // cancels the request; the stream still ends
			}
			continue
		}
		text.WriteString(c.Text)
	}
	if failure != nil {
		return failure
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if *output == "text" {
		_, err = fmt.Fprintln(stdout)
		return err
	}
	return json.NewEncoder(stdout).Encode(struct {
		PromptIDs []int32 `json:"prompt_ids"`
		IDs       []int32 `json:"ids"`
		Text      string  `json:"text"`
	}{nonNil(ids), out, text.String()})
}

// newActorSystem returns an actor system whose own logging is limited to
// errors on stderr.
func newActorSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}))
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// fallbackWhy is why --device auto took the CPU, on one line and short
// (a failed load can list every tensor), for a log line.
func fallbackWhy(err error) string {
	s := strings.Join(strings.Fields(oneLine(err.Error())), " ")
	if len(s) > 400 {
		s = strings.ToValidUTF8(s[:400], "") + "…"
	}
	return s
}
