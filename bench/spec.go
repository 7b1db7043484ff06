package bench

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// SpecOptions set one speculative-decoding measurement: the prompts are
// submitted at once, each a request for MaxTokens tokens: greedy, or
// sampled with Sampling (request i seeded with Sampling.Seed + i).
type SpecOptions struct {
	Prompts   [][]int32
	MaxTokens int
	Sampling  *messages.SamplingParams
	Workers   int                // goroutines of the forward pass; 0: 2
	Spec      actors.SpecConfig  // the zero value: plain decoding
	System    *actor.ActorSystem // nil: one of its own, shut down on return
}

// SpecResult is what a measurement saw: the generated tokens and their
// wall time (from submission to the last request's end), the steps, and
// the drafts verified (vLLM's spec_decode counters).
type SpecResult struct {
	Tokens                        int
	Elapsed                       time.Duration
	Steps                         int64
	Drafts, DraftTokens, Accepted int64
	AcceptedPerPos                []int64 // runs whose draft token i was accepted
	// CPU is the process's CPU time (user and system) over the same span:
	// on a machine other jobs load, wall time measures them too, CPU time
	// far less.
	CPU                            time.Duration
	PromptTokens, MaxTokens, Batch int
}

// TPS is the generation speed in tokens per second (prefill included: it
// is the same with and without speculation).
func (r SpecResult) TPS() float64 { return float64(r.Tokens) / r.Elapsed.Seconds() }

// AcceptanceRate is the fraction of draft tokens accepted.
func (r SpecResult) AcceptanceRate() float64 {
	return float64(r.Accepted) / float64(max(r.DraftTokens, 1))
}

// MeanAcceptedLength is the tokens a verified run gives, on average (the
// accepted draft tokens and the token sampled after them; vLLM's mean
// acceptance length).
func (r SpecResult) MeanAcceptedLength() float64 {
	return 1 + float64(r.Accepted)/float64(max(r.Drafts, 1))
}

// Speculative runs o.Prompts at once on a fresh runtime over m (the CPU
// backend, prefix caching off so each prompt is computed, KV blocks for
// all of them) after a warm-up request, and reports what it saw.
func Speculative(ctx context.Context, m *model.Model, o SpecOptions) (SpecResult, error) {
	if len(o.Prompts) == 0 || o.MaxTokens < 1 {
		return SpecResult{}, errors.New("bench: speculative: no prompt, or max tokens < 1")
	}
	sys := o.System
	if sys == nil {
		sys = quietSystem()
		defer sys.Shutdown()
	}
	longest := 0
	for _, p := range o.Prompts {
		longest = max(longest, len(p))
	}
	ctxLen := longest + o.MaxTokens + 1
	const blockSize = 16
	cfg := actors.Config{
		Workers: o.Workers, MaxModelLen: ctxLen, MaxNumSeqs: len(o.Prompts),
		MaxNumBatchedTokens: max(512, longest), NoPrefixCaching: true, BlockSize: blockSize,
		NumBlocks:   len(o.Prompts) * ((ctxLen+blockSize-1)/blockSize + 1),
		NewBackend:  backend.For(m, backend.DeviceCPU),
		Speculative: o.Spec,
	}
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	rt, err := actors.Start(sys, m, cfg)
	if err != nil {
		return SpecResult{}, err
	}
	defer rt.Stop(statsTimeout)
	if _, err := submit(ctx, rt, o.Prompts[:1], min(o.MaxTokens, 4), nil); err != nil {
		return SpecResult{}, fmt.Errorf("bench: speculative warm-up: %w", err)
	}
	s0, err := rt.Stats(statsTimeout)
	if err != nil {
		return SpecResult{}, err
	}
	var run *batchRun
	cpu0 := cpuTime()
	if o.Sampling != nil {
		run, err = submitSampled(ctx, rt, o.Prompts, o.MaxTokens, *o.Sampling)
	} else {
		run, err = submit(ctx, rt, o.Prompts, o.MaxTokens, nil)
	}
	if err != nil {
		return SpecResult{}, err
	}
	cpu := cpuTime() - cpu0
	s1, err := rt.Stats(statsTimeout)
	if err != nil {
		return SpecResult{}, err
	}
	r := SpecResult{CPU: cpu, Steps: s1.Steps - s0.Steps, Drafts: s1.SpecDrafts - s0.SpecDrafts,
		DraftTokens: s1.SpecDraftTokens - s0.SpecDraftTokens, Accepted: s1.SpecAcceptedTokens - s0.SpecAcceptedTokens,
		PromptTokens: longest, MaxTokens: o.MaxTokens, Batch: len(o.Prompts)}
	for i, n := range s1.SpecAcceptedPerPos {
		if i < len(s0.SpecAcceptedPerPos) {
			n -= s0.SpecAcceptedPerPos[i]
		}
		r.AcceptedPerPos = append(r.AcceptedPerPos, n)
	}
	var end time.Time
	for _, q := range run.reqs {
		if q.err != nil {
			return r, q.err
		}
		r.Tokens += q.tokens
		if q.done.After(end) {
			end = q.done
		}
	}
	r.Elapsed = end.Sub(run.start)
	return r, nil
}

// submitSampled sends one request per prompt sampled with p (request i
// seeded with p.Seed + i), all at once, each for maxTokens tokens
// regardless of end-of-generation tokens, and waits for all of them.
func submitSampled(ctx context.Context, rt *actors.Runtime, prompts [][]int32, maxTokens int, p messages.SamplingParams) (*batchRun, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := &batchRun{reqs: make([]reqRun, len(prompts)), start: time.Now()}
	chans := make([]<-chan *messages.OutputChunk, len(prompts))
	for i, prompt := range prompts {
		sp := p
		sp.Seed, sp.HasSeed = p.Seed+uint64(i), true
		ch, err := rt.Stream(ctx, &messages.GenerateRequest{Prompt: prompt, MaxTokens: maxTokens, IgnoreEOS: true, Sampling: sp})
		if err != nil {
			return nil, err
		}
		chans[i] = ch
	}
	done := make(chan struct{}, len(chans))
	for i, ch := range chans {
		go func(r *reqRun) {
			defer func() { done <- struct{}{} }()
			for c := range ch {
				r.tokens += len(c.Tokens)
				if c.FinishReason == messages.FinishError || c.FinishReason == messages.FinishCancelled {
					r.err = fmt.Errorf("request %s: %s: %s", c.RequestID, c.FinishReason, c.Err)
				}
				if c.Done {
					r.done, r.usage = time.Now(), c.Usage
				}
			}
		}(&run.reqs[i])
	}
	for range chans {
		<-done
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, r := range run.reqs {
		if r.err == nil && r.tokens != maxTokens {
			r.err = fmt.Errorf("request %d received %d of %d tokens", i, r.tokens, maxTokens)
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	return run, nil
}

// cpuTime is the process's user and system CPU time so far (0 when the
// system does not say).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
