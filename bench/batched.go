package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// BatchedOptions are llama-batched-bench's knobs.
type BatchedOptions struct {
	PP int   // prompt tokens per sequence (-npp)
	TG int   // tokens generated per sequence, at least 2 (-ntg)
	PL []int // batch sizes: sequences run in parallel (-npl)

	Workers    int          // goroutines of the forward pass (Config.Workers); 0: 2
	ContextLen int          // positions per sequence (Config.MaxModelLen); 0: PP+TG
	Seed       uint64       // of the random prompt token ids
	KVCache    kv.CacheType // element type of the KV cache (-ctk/-ctv); the zero value is F16
	// Grammar, when set, constrains every request (structured output): the
	// runtime masks each sampled row. It must not end within TG tokens
	// (end-of-generation tokens are ignored, so masked off).
	Grammar *messages.Grammar

	// System is the actor system the runtimes run in; nil: Batched makes
	// one that logs nothing and shuts it down when it returns.
	System *actor.ActorSystem
}

// Validate reports the first impossible option.
func (o BatchedOptions) Validate() error {
	switch {
	case o.PP < 1:
		return fmt.Errorf("bench: prompt length %d < 1", o.PP)
	case o.TG < 2:
		return fmt.Errorf("bench: %d tokens to generate: at least 2, as the first comes from the prefill", o.TG)
	case len(o.PL) == 0:
		return errors.New("bench: no batch size")
	case o.Workers < 0:
		return fmt.Errorf("bench: workers %d < 0", o.Workers)
	case o.ContextLen != 0 && o.ContextLen < o.PP+o.TG:
		return fmt.Errorf("bench: context %d is shorter than %d prompt + %d generated tokens", o.ContextLen, o.PP, o.TG)
	}
	for _, b := range o.PL {
		if b < 1 {
			return fmt.Errorf("bench: batch size %d < 1", b)
		}
	}
	return nil
}

// BatchedRow is one line of llama-batched-bench's table, and how the decode
// steps spent their time. The T fields are the client's clock; DecodeWall
// is the device's (see timedBackend).
type BatchedRow struct {
	PP, TG, B int
	NKV       int // B*(PP+TG): the KV cells the batch ends with, llama-batched-bench's N_KV

	TPP time.Duration // from submission until every request has its first token
	TTG time.Duration // from then until every request is done
	T   time.Duration // TPP + TTG

	PrefillSteps, DecodeSteps int64         // micro-batches of each phase
	PrefillForward            time.Duration // device time of the prefill: forward pass and sampling
	DecodeForward             time.Duration // device time of the decode steps
	// DecodeWall is the decode phase on the device's clock: from the end of
	// the prefill's forward pass to the end of the last decode step's.
	DecodeWall time.Duration

	Generated int   // tokens the requests received: B*TG
	Computed  int64 // tokens the steps computed: B*(PP+TG-1), the last sampled token is never fed back

	// Under a grammar: its compile (in the warm-up, on the compiler
	// actor) and the masks of the timed run, one per sampled token.
	Grammar     bool
	CompileTime time.Duration
	VocabTime   time.Duration // building the matchers' vocabulary (once per runtime)
	Masks       int64         // masks computed
	MaskHits    int64         // of them, from the grammar's per-state cache
	MaskTime    time.Duration // their time, on the sequences' goroutines
}

// MaskCost is the mean time of a mask.
func (r BatchedRow) MaskCost() time.Duration { return r.MaskTime / time.Duration(max(r.Masks, 1)) }

// MaskHitRate is the fraction of masks that came from the cache.
func (r BatchedRow) MaskHitRate() float64 { return float64(r.MaskHits) / float64(max(r.Masks, 1)) }

// SPP is the prefill speed in prompt tokens per second.
func (r BatchedRow) SPP() float64 { return float64(r.B*r.PP) / r.TPP.Seconds() }

// STG is the generation speed in tokens per second. The first token of each
// sequence comes from the prefill step, so TTG produces B*(TG-1) tokens
// (llama-batched-bench decodes TG steps after its prefill and counts B*TG).
func (r BatchedRow) STG() float64 { return float64(r.B*(r.TG-1)) / r.TTG.Seconds() }

// S is the overall speed: B*(PP+TG) tokens over T.
func (r BatchedRow) S() float64 { return float64(r.NKV) / r.T.Seconds() }

// DecodeStep is the mean wall time of a decode step, on the device's clock.
func (r BatchedRow) DecodeStep() time.Duration {
	return r.DecodeWall / time.Duration(max(r.DecodeSteps, 1))
}

// DecodeOverhead is the mean time of a decode step spent outside the
// device's forward pass and sampling: the batcher, the messages, the
// sequence actors, detokenization.
func (r BatchedRow) DecodeOverhead() time.Duration {
	return (r.DecodeWall - r.DecodeForward) / time.Duration(max(r.DecodeSteps, 1))
}

// DecodeOverheadPercent is DecodeOverhead as a percentage of DecodeStep.
func (r BatchedRow) DecodeOverheadPercent() float64 {
	return 100 * float64(r.DecodeWall-r.DecodeForward) / float64(r.DecodeWall)
}

// statsTimeout bounds a Stats round trip to the batcher.
const statsTimeout = 10 * time.Second

// Batched runs llama-batched-bench's measurement on m, one row per batch
// size in o.PL, each on a fresh runtime: prefix caching off and distinct
// random prompts, so nothing is shared between sequences; a step budget of
// max(512, PP*B) tokens and B sequences, so the whole prefill is one step;
// KV blocks for B*(PP+TG) tokens, so nothing is preempted. Before it is
// timed, each runtime runs the same batch for two tokens, so the forward
// pass's scratch has its full size and the weights are paged in.
func Batched(ctx context.Context, m *model.Model, o BatchedOptions) ([]BatchedRow, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	sys := o.System
	if sys == nil {
		sys = quietSystem()
		defer sys.Shutdown()
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x62617463686564)) // "batched"
	rows := make([]BatchedRow, 0, len(o.PL))
	for _, b := range o.PL {
		row, err := batchedRow(ctx, sys, m, o, b, rng)
		if err != nil {
			return rows, fmt.Errorf("bench: B=%d: %w", b, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// batchedRow measures batch size b on a runtime of its own.
func batchedRow(ctx context.Context, sys *actor.ActorSystem, m *model.Model, o BatchedOptions, b int, rng *rand.Rand) (BatchedRow, error) {
	const blockSize = 16
	workers := o.Workers
	if workers == 0 {
		workers = 2
	}
	cpu, err := backend.NewCPUWithCache(m, o.KVCache, b*((o.PP+o.TG+blockSize-1)/blockSize), blockSize, 0, workers)
	if err != nil {
		return BatchedRow{}, err
	}
	be := &timedBackend{Backend: cpu, promptLen: int32(o.PP)}
	cfg := actors.Config{
		Backends:            []actors.Backend{be}, // its KV blocks hold B*(PP+TG) tokens
		MaxNumSeqs:          b,                    // the size trigger fires once all b are in
		MaxNumBatchedTokens: max(512, o.PP*b),
		MaxModelLen:         o.ContextLen,
		NoPrefixCaching:     true,
		// The window only matters if submitting b requests took longer
		// than it: the prefill would be split. Decode steps fire on the
		// size trigger (every sequence ready) and never wait for it.
		Window: time.Second,
	}
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = o.PP + o.TG
	}
	rt, err := actors.Start(sys, m, cfg)
	if err != nil {
		return BatchedRow{}, err
	}
	defer rt.Stop(statsTimeout)

	vocab := m.Config.VocabSize
	prompts := func() [][]int32 {
		ps := make([][]int32, b)
		for i := range ps {
			ps[i] = make([]int32, o.PP)
			for j := range ps[i] {
				ps[i][j] = int32(rng.IntN(vocab))
			}
		}
		return ps
	}
	if _, err := submit(ctx, rt, prompts(), 2, o.Grammar); err != nil {
		return BatchedRow{}, fmt.Errorf("warm-up: %w", err)
	}
	// The batcher counts a step's device time when the step is done, before
	// it sends the results: once every request has ended, Stats has them all.
	s0, err := rt.Stats(statsTimeout)
	if err != nil {
		return BatchedRow{}, err
	}
	be.take()
	g0 := rt.GrammarStats()
	run, err := submit(ctx, rt, prompts(), o.TG, o.Grammar)
	if err != nil {
		return BatchedRow{}, err
	}
	s1, err := rt.Stats(statsTimeout)
	if err != nil {
		return BatchedRow{}, err
	}
	g1 := rt.GrammarStats()
	row, err := run.row(o, b, s0, s1, be.take())
	if o.Grammar != nil {
		row.Grammar, row.CompileTime, row.VocabTime = true, time.Duration(g0.CompileNanos), time.Duration(g0.VocabNanos)
		row.Masks, row.MaskHits, row.MaskTime = g1.Masks-g0.Masks, g1.MaskHits-g0.MaskHits, time.Duration(g1.MaskNanos-g0.MaskNanos)
	}
	return row, err
}

// quietSystem is an actor system that logs nothing, for a run whose
// options name none.
func quietSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
}
