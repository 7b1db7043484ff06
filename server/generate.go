package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// choiceChunk is an output chunk of one choice, with the choice's index in
// the API response (prompt i's choice j is i*n+j).
type choiceChunk struct {
	index int
	c     *messages.OutputChunk
}

// job is one API request in flight: a runtime request per prompt, their
// chunks merged into one stream, and the timings its metrics need.
type job struct {
	s       *Server
	start   time.Time
	n       int
	out     *outQueue // the chunks on their way to the handler (outqueue.go)
	usage   messages.Usage
	first   []time.Time   // (choices) when each choice's first token came
	last    []time.Time   // (choices) its latest token
	finish  []string      // (choices)
	pending int           // runtime requests not yet done
	ttft    bool          // observed
	queue   time.Duration // the longest a choice waited in the scheduler's queue
	ctx     context.Context
	// grammarParam is the request field its grammar comes from, which a
	// choice's grammar error names (choiceError).
	grammarParam string
	failed       *apiError // the latest choice's failure, as drain reports it
}

// launch submits every request and merges their chunks. An invalid request
// cancels those already submitted.
func (s *Server) launch(ctx context.Context, reqs []*messages.GenerateRequest, start time.Time) (*job, *apiError) {
	holdOf(ctx).release() // the prompts are tokenized: the body's budget goes back (promptbound.go)
	n := max(reqs[0].N, 1)
	j := &job{s: s, start: start, n: n, pending: len(reqs),
		first: make([]time.Time, n*len(reqs)), last: make([]time.Time, n*len(reqs)), finish: make([]string, n*len(reqs))}
	// j.ctx ends only when the client goes away or the deadline passes;
	// ctx also when the job is done.
	stopTimer := func() bool { return false }
	if s.cfg.RequestTimeout > 0 {
		ctx, stopTimer = withDeadline(ctx, s.cfg.RequestTimeout)
	}
	j.ctx = ctx
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	j.out = newOutQueue(s.cfg.MaxQueuedOutputBytes, func() { cancelCause(errOutputBacklog) })
	var chans []<-chan *messages.OutputChunk
	for _, req := range reqs {
		if req.LoRA == nil {
			req.LoRA = contextLoRA(ctx) // a runtime adapter's model name (models_routes.go)
		}
		stream := s.rt.Stream
		if s.cfg.Cluster != nil {
			stream = s.cfg.Cluster.Stream
		}
		if fn := s.scripted.Load(); fn != nil {
			stream = *fn
		}
		ch, err := stream(ctx, req)
		if err != nil {
			cancel()
			for _, c := range chans { // they end promptly once cancelled
				for range c {
				}
			}
			return nil, userError(err)
		}
		chans = append(chans, ch)
	}
	var wg sync.WaitGroup
	for i, ch := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range ch {
				j.out.push(choiceChunk{index: i*n + c.Index, c: c})
			}
		}()
	}
	go func() {
		wg.Wait()
		stopTimer()
		cancel()
		j.out.close()
	}()
	return j, nil
}

// withDeadline is ctx ending after d, and a function that stops the timer
// (so that a job done in time never reads as timed out).
func withDeadline(ctx context.Context, d time.Duration) (context.Context, func() bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return ctx, t.Stop
}

// record updates the job's accounting and metrics with a chunk.
func (j *job) record(cc choiceChunk) {
	now := time.Now()
	m := j.s.metrics
	c := cc.c
	if c.Done {
		j.usage.PromptTokens += c.Usage.PromptTokens
		j.usage.CompletionTokens += c.Usage.CompletionTokens
		j.usage.CachedTokens += c.Usage.CachedTokens
		j.usage.Preemptions += c.Usage.Preemptions
		j.usage.DraftTokens += c.Usage.DraftTokens
		j.usage.AcceptedDraftTokens += c.Usage.AcceptedDraftTokens
		m.promptTokens.Add(float64(c.Usage.PromptTokens))
		m.generationTokens.Add(float64(c.Usage.CompletionTokens))
		if j.pending--; j.pending == 0 {
			m.e2e.Observe(now.Sub(j.start).Seconds())
			if j.usage.Preemptions > 0 {
				m.preempted.Inc()
			}
			for _, f := range j.finish {
				m.success.WithLabelValues(f).Inc()
			}
		}
		return
	}
	i := cc.index
	if c.QueueNanos > 0 {
		j.queue = max(j.queue, time.Duration(c.QueueNanos))
		m.queue.Observe(time.Duration(c.QueueNanos).Seconds())
	}
	if len(c.Tokens) > 0 {
		if j.first[i].IsZero() {
			j.first[i] = now
			if !j.ttft {
				j.ttft = true
				m.ttft.Observe(now.Sub(j.start).Seconds())
			}
		} else {
			m.itl.Observe(now.Sub(j.last[i]).Seconds() / float64(len(c.Tokens)))
		}
		j.last[i] = now
	}
	if c.FinishReason != "" {
		j.finish[i] = c.FinishReason
	}
}

// drain reads the job to its end, recording every chunk, and calls fn with
// each chunk of a choice (not the request's Done chunks). It returns the
// error of a choice that failed, if any. A choice cancelled because the
// request ran past Config.RequestTimeout, or because the runtime is
// stopping, is passed to fn as failed.
func (j *job) drain(fn func(index int, c *messages.OutputChunk)) (failed *apiError) {
	for {
		cc, ok := j.out.pop()
		if !ok {
			break
		}
		j.record(cc)
		c := cc.c
		if c.Done {
			continue
		}
		if c.FinishReason == messages.FinishCancelled {
			switch err := j.ctx.Err(); {
			case errors.Is(context.Cause(j.ctx), context.DeadlineExceeded):
				failed = j.timeout()
			case err == nil && j.out.hasOverflowed():
				failed = j.backlog()
			case err == nil: // not the client: the runtime is stopping
				failed = unavailable("the server is shutting down; the request was cancelled")
			}
			if failed != nil {
				c.FinishReason, c.Err = messages.FinishError, failed.Message
			}
		} else if c.FinishReason == messages.FinishError {
			failed = j.choiceError(c)
		}
		j.failed = failed
		fn(cc.index, c)
	}
	return failed
}

// timeout is the error of a request that ran past Config.RequestTimeout.
func (j *job) timeout() *apiError {
	return &apiError{Status: http.StatusRequestTimeout, Type: "timeout_error", Code: strp("request_timeout"),
		Message: fmt.Sprintf("the request ran past the server's limit of %v (--request-timeout)", j.s.cfg.RequestTimeout)}
}

// errOutputBacklog is the cause of a job cancelled because its client read
// its output too slowly (outQueue).
var errOutputBacklog = errors.New("the client read its output too slowly")

// backlog is the error of a job whose queued output went past
// Config.MaxQueuedOutputBytes.
func (j *job) backlog() *apiError {
	return &apiError{Status: http.StatusRequestTimeout, Type: "timeout_error", Code: strp("output_backlog"),
		Message: fmt.Sprintf("%v: more than %d bytes of output were waiting to be sent", errOutputBacklog, j.s.cfg.MaxQueuedOutputBytes)}
}

// newID is pipeline.NewID.
func newID(prefix string) string { return pipeline.NewID(prefix) }
