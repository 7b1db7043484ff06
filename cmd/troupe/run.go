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
	"github.com/troupe-llm/troupe/model"
)

// runOptions is what troupe run's flags ask for, checked.
type runOptions struct {
	path, prompt, output string // path: as given; resolve makes it local
	cacheDir             string // --cache-dir: serve's, for hub models
	n, ctxLen, threads   int
	noSpecial            bool
	kind                 string // the device, from deviceFlag
	kvType               *kv.CacheType
	repack               *model.Repack
	spec                 actors.SpecConfig
	draftPath            string
	adapters             []loraSpec
	mmproj               string
	noMMProj             bool
	images               []string
	params               messages.SamplingParams
}

func runCmd(args []string, stdout, stderr io.Writer) error {
	o, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := o.resolve(ctx, stderr); err != nil {
		return err
	}
	m, err := openModelWith(o.path, *o.repack)
	if err != nil {
		return err
	}
	defer m.Close()
	closeAdapters, err := openAdapters(m, o.adapters, 0)
	if err != nil {
		return err
	}
	defer closeAdapters()
	encoder, closeProjector, err := openProjector(o.mmproj, m)
	if err != nil {
		return err
	}
	defer closeProjector()
	ids, err := m.Tokenizer.Encode(o.prompt, !o.noSpecial, !o.noSpecial)
	if err != nil {
		return err
	}

	// The request goes through the actor runtime, as a server's would.
	system := newActorSystem()
	defer system.Shutdown()
	// One sequence: KV blocks for one context, not a server's pool.
	ctxTokens := o.ctxLen
	if ctxTokens <= 0 {
		ctxTokens = m.Config.ContextLen
	}
	closeDraft, err := openDraft(&o.spec, o.draftPath, o.kind, *o.repack)
	if err != nil {
		return err
	}
	defer closeDraft()
	devices := backend.NewSelector(m, o.kind)
	rt, err := actors.Start(system, m, actors.Config{Workers: o.threads, MaxModelLen: o.ctxLen, Devices: 1,
		MaxNumSeqs: 1, NumBlocks: (ctxTokens + kv.DefaultBlockSize - 1) / kv.DefaultBlockSize, NewBackend: devices.New,
		KVCacheType: *o.kvType, Speculative: o.spec, Encoder: encoder})
	if err != nil {
		return err
	}
	var spans []messages.ImageInput
	if len(o.images) > 0 { // mmproj.go
		if ids, spans, err = imagePrompt(rt, o.prompt, o.images, !o.noSpecial); err != nil {
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
	req := &messages.GenerateRequest{Prompt: ids, MaxTokens: max(o.n, 0), Sampling: o.params, Images: spans}
	return streamRun(ctx, stop, rt, req, o.output, stdout)
}

// resolve makes o.path local as serve's -m is (a hub model downloaded into
// the cache; hf.co/OWNER/REPO[:QUANT] choosing the GGUF by quant, as
// /api/pull does) and finds a hub model's projector (autoProjector) unless
// --mmproj or --no-mmproj is given.
func (o *runOptions) resolve(ctx context.Context, stderr io.Writer) error {
	spec, err := hubModelURI(ctx, o.path, o.cacheDir, stderr) // hubmmproj.go
	if err != nil {
		return err
	}
	if o.path, err = resolveModel(ctx, spec, o.cacheDir, stderr); err != nil { // serve.go
		return err
	}
	if err := autoProjector(ctx, spec, o.cacheDir, &o.mmproj, o.noMMProj, stderr); err != nil {
		return err
	}
	if len(o.images) > 0 && o.mmproj == "" {
		return usageError{"--image: no projector found for " + spec + " (its repository has none, or was not listed): give one with --mmproj FILE"}
	}
	return nil
}

// parseRunFlags reads and checks troupe run's flags; a bad one is a
// usageError. The model may also come first, before the flags, as
// `ollama run MODEL` takes it.
func parseRunFlags(args []string, stderr io.Writer) (*runOptions, error) {
	o := &runOptions{}
	fs := newFlags("run", stderr)
	var model string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		model, args = args[0], args[1:]
	}
	const modelUsage = "model: a GGUF file, a safetensors directory, hf://OWNER/REPO[/FILE], or hf.co/OWNER/REPO[:QUANT] (the GGUF of that quant, default Q4_K_M); also the first argument"
	fs.StringVar(&o.path, "m", "", modelUsage)
	hfRepo := fs.String("hf", "", "llama-cli's -hf: OWNER/REPO[:QUANT], as -m hf.co/OWNER/REPO[:QUANT]")
	fs.StringVar(hfRepo, "hf-repo", "", "the same as -hf")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "download cache for hub models (default $TROUPE_CACHE, else the user cache dir)")
	fs.StringVar(&o.prompt, "p", "", "prompt text (required)")
	fs.IntVar(&o.n, "n", 128, "tokens to generate at most (-1: until the context is full)")
	fs.IntVar(&o.ctxLen, "c", 0, "context length (0: the model's)")
	temp := fs.Float64("temp", 0.8, "temperature (0: greedy)")
	topK := fs.Int("top-k", 40, "top-k (0: off)")
	topP := fs.Float64("top-p", 0.95, "top-p (1: off)")
	minP := fs.Float64("min-p", 0.05, "min-p (0: off)")
	rep := fs.Float64("repeat-penalty", 1.0, "repetition penalty (1: off)")
	seed := fs.Int64("seed", -1, "random seed (-1: random)")
	fs.IntVar(&o.threads, "t", 2, "threads")
	deviceKind := fs.String("device", "auto", "device: auto (CUDA when the model loads on a GPU, else the CPU), cpu or cuda")
	fs.StringVar(&o.output, "output", "text", "output: text (streamed) or json")
	fs.BoolVar(&o.noSpecial, "no-special", false, "do not add BOS/EOS or parse special tokens in the prompt")
	o.kvType = kvCacheTypeFlag(fs)
	o.repack = repackFlag(fs)
	specVar(fs, &o.spec, &o.draftPath)
	loraVar(fs, &o.adapters)
	mmprojVar(fs, &o.mmproj)     // mmproj.go
	noMMProjVar(fs, &o.noMMProj) // hubmmproj.go
	fs.Var(listFlag{&o.images}, "image", "image `FILE`s for the prompt (with --mmproj, or a hub model's projector), comma-separated or repeated: each where the prompt has <__media__>, else before it")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := o.modelArg(model, *hfRepo); err != nil {
		return nil, err
	}
	if err := checkSpec(&o.spec, o.draftPath); err != nil {
		return nil, usageError{err.Error()}
	}
	switch {
	case o.output != "text" && o.output != "json":
		return nil, usageError{fmt.Sprintf("--output %q: want text or json", o.output)}
	case o.threads < 1:
		return nil, usageError{"-t must be at least 1"}
	}
	device, err := loraDevice(*deviceKind, o.adapters)
	if err != nil {
		return nil, err
	}
	switch {
	case o.mmproj != "" && o.noMMProj:
		return nil, usageError{"--no-mmproj and --mmproj: give one of the two"}
	case len(o.images) > 0 && o.noMMProj:
		return nil, usageError{"--image with --no-mmproj: the model would run text only (give --mmproj FILE, or leave --no-mmproj out for a hub model's projector)"}
	case len(o.images) > 0 && o.mmproj == "" && !isHubSpec(o.path):
		return nil, usageError{"--image needs a projector: give one with --mmproj FILE (a hub model's repository projector is found by itself)"}
	}
	if o.kind, err = deviceFlag(device); err != nil {
		return nil, err
	}
	o.params = messages.SamplingParams{Temperature: float32(*temp), TopK: *topK, TopP: float32(*topP), MinP: float32(*minP),
		RepetitionPenalty: float32(*rep), PenaltyLastN: 64, HasSeed: *seed >= 0, Seed: uint64(*seed)}
	if err := actors.SampleParams(&o.params).Validate(); err != nil {
		return nil, usageError{err.Error()}
	}
	return o, nil
}

// modelArg sets o.path from the one of -m, the first argument (model) and
// -hf that is given.
func (o *runOptions) modelArg(model, hfRepo string) error {
	hfRepo, err := hfRepoSpec(hfRepo)
	if err != nil {
		return err
	}
	given := 0
	for _, v := range []string{o.path, model, hfRepo} {
		if v != "" {
			given++
			o.path = v
		}
	}
	switch given {
	case 0:
		return usageError{"-m MODEL is required (or the model as the first argument, or -hf OWNER/REPO[:QUANT])"}
	case 1:
		return nil
	}
	return usageError{"the model is given twice: give one of -m, -hf and the first argument"}
}

// hfRepoSpec is llama-cli's and llama-server's -hf OWNER/REPO[:QUANT] as
// the model name hubModelURI resolves ("" stays "").
func hfRepoSpec(hfRepo string) (string, error) {
	if hfRepo == "" {
		return "", nil
	}
	if strings.Contains(hfRepo, "://") || strings.HasPrefix(hfRepo, "hf.co/") || strings.HasPrefix(hfRepo, "huggingface.co/") {
		return "", usageError{fmt.Sprintf("-hf %q: want OWNER/REPO[:QUANT]", hfRepo)}
	}
	return "hf.co/" + hfRepo, nil
}

// isHubSpec reports whether a model spec names a hub model (whose
// repository may hold a projector) rather than a path.
func isHubSpec(spec string) bool {
	return strings.HasPrefix(spec, "hf://") || isHubName(spec)
}

// streamRun runs req on rt and writes its output: the text as it comes
// (output "text") or one JSON object at the end ("json"). stop cancels ctx.
func streamRun(ctx context.Context, stop context.CancelFunc, rt *actors.Runtime, req *messages.GenerateRequest,
	output string, stdout io.Writer) error {
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
		if output == "text" {
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
	if output == "text" {
		_, err = fmt.Fprintln(stdout)
		return err
	}
	return json.NewEncoder(stdout).Encode(struct {
		PromptIDs []int32 `json:"prompt_ids"`
		IDs       []int32 `json:"ids"`
		Text      string  `json:"text"`
	}{nonNil(req.Prompt), out, text.String()})
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
