package actors

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/sample"
	"github.com/troupe-llm/troupe/model/tokenizer"
)

// ErrStopped is returned once the Runtime is stopped.
var ErrStopped = errors.New("runtime stopped")

// Runtime is troupe running inside an actor system: a batcher actor and its
// device actors, and a grammar compiler actor, serving generation requests. Its methods are safe for
// concurrent use.
type Runtime struct {
	system  *actor.ActorSystem
	batcher *actor.PID
	model   *model.Model
	tok     *tokenizer.Tokenizer
	cfg     Config
	owned   []Backend // the backends Start made (Config.NewBackend), closed by Stop
	devices []Backend // every device's backend, owned or the caller's
	// kvWindow is the window behind which every device frees blocks
	// (commonKVWindow), for the admission check (validate.go).
	kvWindow int

	compiler *actor.PID // compiles grammars off the step (compiler.go)
	encoder  *actor.PID // encodes images off the step (encoder.go); nil: no Config.Encoder
	// bidirectional: the encoder's image rows attend to one another both
	// ways (its Bidirectional method: Gemma 3's projector), as mtmd
	// decodes them.
	bidirectional bool
	grammars      *grammar.Cache // compiled grammars, by kind and source
	compileFn     compileFunc
	vocabs        [2]lazyVocab // grammar vocabularies: control tokens' text dropped, kept
	grammarStats  grammarCounters
	samplingAids  samplingAids // DRY breakers and min_tokens masks (samplefields.go)
	drafter       *draftRunner // the draft model's runner (SpecDraft); nil: none
	draftDevice   *actor.PID   // its device actor
	lora          loraScales   // the adapters' current default scales (lora.go)

	nextSeq atomic.Uint64
	nextReq atomic.Uint64

	mu       sync.Mutex
	stopped  bool
	requests map[*actor.PID]struct{} // live request actors
	idle     *sync.Cond              // signalled when requests empties
}

// Start starts the runtime for m (opened with model.Open, so it has a
// tokenizer) inside system: it spawns the batcher, which spawns one device
// actor per Config.Devices. Stop it with Stop; the system stays the caller's.
func Start(system *actor.ActorSystem, m *model.Model, cfg Config) (*Runtime, error) {
	if m.Tokenizer == nil {
		return nil, fmt.Errorf("actors: the model has no tokenizer (open it with model.Open)")
	}
	c := &m.Config
	cfg = cfg.WithDefaults(c)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.LoRA == nil {
		cfg.LoRA = m.Adapters()
	}
	if cfg.Encoder != nil && cfg.Encoder.Dim() != c.InputDim() { // Qwen3-VL: wider rows, the deepstack slices (model.Config.InputDim)
		return nil, fmt.Errorf("actors: the image encoder gives rows of %d values, the model's input width is %d", cfg.Encoder.Dim(), c.InputDim())
	}
	m.SetContextLen(cfg.MaxModelLen) // LongRoPE's factors for this context, as llama.cpp's n_ctx_seq
	backends := cfg.Backends
	var owned []Backend // made here, closed by Stop
	if len(backends) == 0 {
		bc := BackendConfig{NumBlocks: cfg.NumBlocks, BlockSize: cfg.BlockSize, NumHostBlocks: cfg.NumHostBlocks, Workers: cfg.Workers,
			KVCacheType: cfg.KVCacheType}
		for i := range cfg.Devices {
			be, err := cfg.NewBackend(i, bc)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("actors: device %d: %w", i, err), closeBackends(owned))
			}
			owned = append(owned, be)
		}
		backends = owned
	}
	for i, be := range backends {
		err := cfg.schedConfig(be).Validate()
		if be.VocabSize() != c.VocabSize {
			err = fmt.Errorf("vocabulary of %d, the model %d", be.VocabSize(), c.VocabSize)
		}
		if err != nil {
			closeBackends(owned)
			return nil, fmt.Errorf("actors: backend %d: %w", i, err)
		}
	}
	if cfg.Encoder != nil {
		mr, _ := cfg.Encoder.(interface{ MRoPE() bool })
		if has := mr != nil && mr.MRoPE(); has != m.Features.Has(model.MRoPE) {
			closeBackends(owned)
			return nil, fmt.Errorf("actors: the image encoder's M-RoPE positions (%v) do not match the %s model's M-RoPE (%v)", has, c.Arch, !has)
		}
	}
	var drafter *draftRunner
	if cfg.Speculative.Type == SpecDraft {
		var err error
		if drafter, err = newDraftRunner(m, cfg.Speculative, cfg.NumBlocks, cfg.BlockSize, cfg.Workers); err != nil {
			return nil, errors.Join(err, closeBackends(owned))
		}
	}
	r := &Runtime{system: system, model: m, tok: m.Tokenizer, cfg: cfg, requests: make(map[*actor.PID]struct{}), owned: owned,
		devices: backends, kvWindow: commonKVWindow(backends), grammars: grammar.NewCache(grammarCacheSize, grammarCacheBytes), compileFn: compileSource,
		drafter: drafter}
	r.idle = sync.NewCond(&r.mu)
	r.lora.init(cfg.LoRA)
	if err := r.checkAdapters(m); err != nil {
		closeBackends(owned)
		if drafter != nil {
			drafter.close()
		}
		return nil, err
	}
	props := actor.PropsFromProducer(newBatcher(cfg, backends, m.Tokenizer.IsEOG, r.infillVocab),
		actor.WithSupervisor(actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)))
	r.batcher = system.Root.SpawnPrefix(props, "batcher-")
	r.compiler = system.Root.SpawnPrefix(actor.PropsFromProducer(newCompiler(r)), "grammar-compiler-")
	if cfg.Encoder != nil {
		r.encoder = system.Root.SpawnPrefix(actor.PropsFromProducer(newEncoder(cfg.Encoder, cfg.Workers)), "image-encoder-")
		if b, ok := cfg.Encoder.(interface{ Bidirectional() bool }); ok {
			r.bidirectional = b.Bidirectional()
		}
	}
	if drafter != nil {
		r.draftDevice = system.Root.SpawnPrefix(actor.PropsFromProducer(newDraftDevice(drafter)), "draft-device-")
	}
	return r, nil
}

// Device is the kind of device the runtime computes on, as its backends
// tell it ("cpu" or "cuda"; "" when they do not say). Cluster members
// compare it: CPU and CUDA logits differ.
func (r *Runtime) Device() string {
	if len(r.devices) == 0 {
		return ""
	}
	if k, ok := r.devices[0].(interface{ DeviceKind() string }); ok {
		return k.DeviceKind()
	}
	return ""
}

// Config returns the runtime's configuration, defaults applied.
func (r *Runtime) Config() Config { return r.cfg }

// Model returns the model the runtime serves.
func (r *Runtime) Model() *model.Model { return r.model }

// Tokenize encodes text with the model's tokenizer, adding BOS (and the
// like) and parsing special tokens, as a prompt.
func (r *Runtime) Tokenize(text string) ([]int32, error) { return r.tok.Encode(text, true, true) }

// Stream submits req and returns the channel its output arrives on, one
// OutputChunk per new token of a choice, closed after the chunk with Done
// set. Cancelling ctx cancels the request: its sequences stop wherever they
// are, their KV blocks are freed, and the last chunks say FinishCancelled.
// The runtime never waits for the reader: output not yet read is queued,
// so the reader must read the channel until it is closed (after cancelling
// ctx, that is soon).
//
// Stream does not change req; what req leaves open (RequestID, a seed) is
// filled in on a copy. It returns an error wrapping ErrInvalidRequest for a
// request that can never be served.
func (r *Runtime) Stream(ctx context.Context, req *messages.GenerateRequest) (<-chan *messages.OutputChunk, error) {
	if err := r.check(req); err != nil {
		return nil, err
	}
	run := *req
	if run.RequestID == "" {
		run.RequestID = "req-" + strconv.FormatUint(r.nextReq.Add(1), 10)
	}
	if !run.Sampling.HasSeed {
		run.Sampling.Seed, run.Sampling.HasSeed = rand.Uint64(), true
	}
	r.prepareSampling(&run.Sampling)
	ch, sink, done := NewOutputStream(max(run.N, 1))
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil, ErrStopped
	}
	props := actor.PropsFromProducer(newRequest(r, &run, sink),
		actor.WithSupervisor(actor.NewOneForOneStrategy(0, 0, func(any) actor.Directive { return actor.StopDirective })))
	pid := r.system.Root.SpawnPrefix(props, "request-")
	r.requests[pid] = struct{}{}
	r.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			r.system.Root.Send(pid, &messages.Cancel{RequestID: run.RequestID, Reason: context.Cause(ctx).Error()})
		case <-done:
		}
	}()
	return ch, nil
}

// Generate submits req and calls fn with each chunk, in the caller's
// goroutine, until the request is done; it returns the final chunk's Usage.
// An error from fn cancels the request and is returned once it has ended.
func (r *Runtime) Generate(ctx context.Context, req *messages.GenerateRequest, fn func(*messages.OutputChunk) error) (*messages.Usage, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ch, err := r.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	var usage *messages.Usage
	var fnErr error
	for c := range ch {
		if c.Done {
			usage = c.Usage
		}
		if fnErr == nil && fn != nil {
			if fnErr = fn(c); fnErr != nil {
				cancel(fnErr)
			}
		}
	}
	if fnErr != nil {
		return usage, fnErr
	}
	return usage, ctx.Err()
}

// Stats asks the batcher for a snapshot of the schedule and its counters.
func (r *Runtime) Stats(timeout time.Duration) (*messages.Stats, error) {
	return askBatcher[*messages.Stats](r, &messages.GetStats{}, timeout, "stats")
}

// askBatcher sends msg to the batcher and returns its answer, of type T;
// what names the question in the error when no answer comes in time.
func askBatcher[T any](r *Runtime, msg any, timeout time.Duration, what string) (T, error) {
	res, err := r.system.Root.RequestFuture(r.batcher, msg, timeout).Result()
	if err != nil {
		var none T
		return none, fmt.Errorf("actors: %s: %w", what, err)
	}
	return res.(T), nil
}

// Stop cancels every request in flight, waits for them to end (at most
// timeout), then stops the batcher and its devices. Later calls to Stream
// return ErrStopped.
func (r *Runtime) Stop(timeout time.Duration) error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	for pid := range r.requests {
		r.system.Root.Send(pid, &messages.Cancel{Reason: "runtime stopping"})
	}
	deadline := time.AfterFunc(timeout, func() { r.mu.Lock(); r.idle.Broadcast(); r.mu.Unlock() })
	start := time.Now()
	for len(r.requests) > 0 && time.Since(start) < timeout {
		r.idle.Wait()
	}
	deadline.Stop()
	left := len(r.requests)
	r.mu.Unlock()
	if err := r.system.Root.StopFuture(r.batcher).Wait(); err != nil {
		return fmt.Errorf("actors: stopping the batcher: %w", err)
	}
	if err := r.system.Root.StopFuture(r.compiler).Wait(); err != nil {
		return fmt.Errorf("actors: stopping the grammar compiler: %w", err)
	}
	if r.encoder != nil {
		if err := r.system.Root.StopFuture(r.encoder).Wait(); err != nil {
			return fmt.Errorf("actors: stopping the image encoder: %w", err)
		}
	}
	if err := closeBackends(r.owned); err != nil { // their device actors stopped with the batcher
		return err
	}
	if r.drafter != nil {
		if err := r.system.Root.StopFuture(r.draftDevice).Wait(); err != nil {
			return fmt.Errorf("actors: stopping the draft device: %w", err)
		}
		if err := r.drafter.close(); err != nil {
			return fmt.Errorf("actors: the draft model's device: %w", err)
		}
	}
	if left > 0 {
		return fmt.Errorf("actors: %d requests still running after %v", left, timeout)
	}
	return nil
}

// requestEnded is called by a request actor when it stops.
func (r *Runtime) requestEnded(pid *actor.PID) {
	r.mu.Lock()
	delete(r.requests, pid)
	if len(r.requests) == 0 {
		r.idle.Broadcast()
	}
	r.mu.Unlock()
}

// seqSeed is the seed of choice i of a request seeded with seed: choices of
// one request differ, and each is reproducible.
func seqSeed(seed uint64, i int) uint64 {
	if i == 0 {
		return seed
	}
	return sample.DrawSeed(seed, 1<<40+uint64(i))
}

// closeBackends closes the backends that hold resources (a GPU's memory).
func closeBackends(bes []Backend) error {
	var errs []error
	for _, be := range bes {
		if c, ok := be.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("actors: closing a device: %w", err)
	}
	return nil
}
