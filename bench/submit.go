package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

// reqRun is what one request did, as its client saw it.
type reqRun struct {
	first, done time.Time
	tokens      int
	usage       *messages.Usage
	err         error
}

// batchRun is a batch of requests submitted at once.
type batchRun struct {
	start time.Time
	reqs  []reqRun
}

// submit sends one greedy request per prompt, all at once, each for
// maxTokens tokens regardless of end-of-generation tokens (under g when it
// is set), and waits for all of them.
func submit(ctx context.Context, rt *actors.Runtime, prompts [][]int32, maxTokens int, g *messages.Grammar) (*batchRun, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := &batchRun{reqs: make([]reqRun, len(prompts))}
	var wg sync.WaitGroup
	run.start = time.Now()
	for i, p := range prompts {
		ch, err := rt.Stream(ctx, &messages.GenerateRequest{Prompt: p, MaxTokens: maxTokens, IgnoreEOS: true, Grammar: g})
		if err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
		wg.Add(1)
		go func(r *reqRun) {
			defer wg.Done()
			for c := range ch {
				now := time.Now()
				if len(c.Tokens) > 0 && r.tokens == 0 {
					r.first = now
				}
				r.tokens += len(c.Tokens)
				if c.FinishReason == messages.FinishError || c.FinishReason == messages.FinishCancelled {
					r.err = fmt.Errorf("request %s: %s: %s", c.RequestID, c.FinishReason, c.Err)
				}
				if c.FinishReason == messages.FinishStop && g != nil {
					r.err = fmt.Errorf("request %s: the grammar ended after %d tokens, before %d: give one whose output goes on longer", c.RequestID, r.tokens, maxTokens)
				}
				if c.Done {
					r.done, r.usage = now, c.Usage
				}
			}
		}(&run.reqs[i])
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i := range run.reqs {
		r := &run.reqs[i]
		switch {
		case r.err != nil:
			return nil, r.err
		case r.usage == nil || r.tokens != maxTokens || r.usage.CompletionTokens != maxTokens:
			return nil, fmt.Errorf("request %d received %d of %d tokens", i, r.tokens, maxTokens)
		case r.usage.CachedTokens != 0:
			return nil, fmt.Errorf("request %d found %d prompt tokens cached with prefix caching off", i, r.usage.CachedTokens)
		}
	}
	return run, nil
}

// row turns a measured batch, the Stats before (s0) and after it (s1) and
// its forward passes into a table row.
//
// The device time of a step (Stats.ForwardNanos) is its forward pass and
// then the sampling of its logits rows; the forward passes are split into
// prefill and decode exactly, and the rest is shared out evenly over the
// steps, as every step samples one row per sequence.
func (run *batchRun) row(o BatchedOptions, b int, s0, s1 *messages.Stats, steps []forwardStep) (BatchedRow, error) {
	var firstAll, doneAll time.Time
	generated := 0
	for _, r := range run.reqs {
		if r.first.After(firstAll) {
			firstAll = r.first
		}
		if r.done.After(doneAll) {
			doneAll = r.done
		}
		generated += r.tokens
	}
	row := BatchedRow{
		PP: o.PP, TG: o.TG, B: b, NKV: b * (o.PP + o.TG),
		TPP: firstAll.Sub(run.start), TTG: doneAll.Sub(firstAll), T: doneAll.Sub(run.start),
		Generated: generated,
		Computed:  s1.StepTokens - s0.StepTokens,
	}
	var fwdPP, fwdTG time.Duration
	var prefillEnd, decodeEnd time.Time
	for _, st := range steps {
		if st.prompt {
			row.PrefillSteps++
			fwdPP += st.end.Sub(st.start)
			prefillEnd = st.end
		} else {
			row.DecodeSteps++
			fwdTG += st.end.Sub(st.start)
			decodeEnd = st.end
		}
	}
	n := row.PrefillSteps + row.DecodeSteps
	if got := s1.Steps - s0.Steps; got != n || row.PrefillSteps == 0 || row.DecodeSteps == 0 {
		return row, fmt.Errorf("the batcher dispatched %d steps, the device ran %d prefill and %d decode steps",
			got, row.PrefillSteps, row.DecodeSteps)
	}
	rest := time.Duration(s1.ForwardNanos-s0.ForwardNanos) - fwdPP - fwdTG
	row.PrefillForward = fwdPP + rest*time.Duration(row.PrefillSteps)/time.Duration(n)
	row.DecodeForward = fwdTG + rest*time.Duration(row.DecodeSteps)/time.Duration(n)
	// From the end of the last prefill forward pass to the end of the last
	// decode one: DecodeSteps forward passes, and before each the sampling
	// of the step before it and the round trip through the actors.
	row.DecodeWall = decodeEnd.Sub(prefillEnd)
	if k := s1.Preemptions - s0.Preemptions; k > 0 {
		return row, fmt.Errorf("%d preemptions: the KV blocks did not hold the batch", k)
	}
	if want := int64(b * (o.PP + o.TG - 1)); row.Computed != want {
		return row, fmt.Errorf("the steps computed %d tokens, want %d", row.Computed, want)
	}
	return row, nil
}
