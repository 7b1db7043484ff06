package cluster

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/messages"
)

// call is the origin's side of a request that runs on another node: it
// sends the request, passes the output on, and when the node running it is
// lost, sends it again to another node and passes on only what the client
// has not had yet. The rerun gives the same output: the CPU forward pass
// is batch-invariant and every request carries a seed (Node.Stream sets
// one), so each choice draws the same tokens.
type call struct {
	n       *Node
	req     *messages.GenerateRequest
	sink    func(*messages.OutputChunk)
	attempt int
	id      string     // of the current attempt
	job     *actor.PID // running it, once known
	target  *actor.PID // the worker it was sent to
	// identity is the grain's, when target is one ("": a node's worker);
	// resolved counts how often it was looked up again.
	identity string
	resolved int
	tried    map[string]bool
	limits   relayLimits // what a choice may get (relaybound.go)
	sent     []progress  // per choice: what the client has had
	seen     []progress  // per choice: what the current attempt has produced
	ended    bool
}

// progress is what one choice has given: to the client (sent: ids holds
// the ids of its tokens) or in the current attempt (seen).
type progress struct {
	ids          []int32
	tokens, text int
	finished     bool
}

// maxAttempts bounds how often one request is sent to a node.
const maxAttempts = 3

// clientCancel is the client going away. Stream's goroutine -> call.
type clientCancel struct{ reason string }

func (c *call) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		c.onStarted(ctx)
	case *wrapperspb.BytesValue:
		c.onEnvelope(ctx, msg)
	case *actor.Terminated:
		c.onTerminated(ctx, msg)
	case *clientCancel:
		c.onClientCancel(ctx, msg)
	}
}

func (c *call) onStarted(ctx actor.Context) {
	c.sent = make([]progress, max(c.req.N, 1))
	c.limits = c.n.limitsFor(c.req)
	c.tried = map[string]bool{}
	first := c.target
	c.target = nil
	c.send(ctx, first)
}

// onEnvelope takes a batch of the current attempt's output.
func (c *call) onEnvelope(ctx actor.Context, msg *wrapperspb.BytesValue) {
	e, err := unwrap(msg)
	if err != nil || e.Chunks == nil || e.Chunks.ID != c.id || c.ended {
		return // an earlier attempt's, or after the end
	}
	if e.Chunks.Refused {
		why := "the node refused the request"
		if len(e.Chunks.Chunks) > 0 {
			why = e.Chunks.Chunks[0].Err
		}
		c.failover(ctx, why)
		return
	}
	if e.Chunks.Job != nil && c.job == nil {
		c.job = e.Chunks.Job.actor()
		ctx.Watch(c.job) // ends by itself: the watch goes with it
		ctx.Unwatch(c.target)
	}
	for _, ch := range e.Chunks.Chunks {
		c.pass(ctx, ch)
	}
}

// onTerminated: a watched worker or job has stopped; its node going away
// loses the attempt.
func (c *call) onTerminated(ctx actor.Context, msg *actor.Terminated) {
	switch {
	case c.ended:
	case c.job == nil && msg.Who.Equal(c.target) && msg.Why != actor.TerminatedReason_AddressTerminated && c.identity != "":
		// The grain was passivated before it took the request: ask the
		// cluster for its new activation.
		c.n.c.PidCache.RemoveByValue(c.identity, workerKind, c.target)
		if c.resolved++; c.resolved <= maxAttempts {
			if grain := c.n.c.Get(c.identity, workerKind); grain != nil {
				c.send(ctx, grain) // a new attempt: what a job started by the old grain sends is ignored
				return
			}
		}
		c.failover(ctx, "the request's worker could not be reached")
	case msg.Why != actor.TerminatedReason_AddressTerminated:
		// A job stops by itself once it has sent its output (which may
		// still be on its way): only its node going away is a loss.
	case (c.job != nil && msg.Who.Equal(c.job)) || (c.job == nil && msg.Who.Equal(c.target)):
		c.failover(ctx, fmt.Sprintf("node %s went away", msg.Who.Address))
	}
}

func (c *call) onClientCancel(ctx actor.Context, msg *clientCancel) {
	if c.job != nil {
		ctx.Send(c.job, wrap(&envelope{Cancel: &cancel{Reason: msg.reason}}))
	}
	c.end(ctx, messages.FinishCancelled, msg.reason)
}

// send sends the request to target as a new attempt.
func (c *call) send(ctx actor.Context, target *actor.PID) {
	if c.target != nil && c.job == nil {
		ctx.Unwatch(c.target)
	}
	c.attempt++
	c.id = fmt.Sprintf("%s/%d", c.req.RequestID, c.attempt)
	c.job, c.target = nil, target
	c.tried[target.Address] = true
	c.seen = make([]progress, len(c.sent))
	ctx.Watch(target)
	ctx.Send(target, wrap(&envelope{Generate: &generate{ID: c.id, ReplyTo: toPID(ctx.Self()), Req: *c.req, From: c.n.id}}))
}

// failover sends the request to another node, or ends it with an error
// when none is left or it has been tried too often.
func (c *call) failover(ctx actor.Context, why string) {
	c.n.failovers.Add(1)
	if c.attempt >= maxAttempts {
		c.end(ctx, messages.FinishError, why+"; the request was tried on "+fmt.Sprint(c.attempt)+" nodes")
		return
	}
	c.n.forget(c.target)
	c.identity = ""
	next := c.n.failoverWorker(c.tried)
	if next == nil {
		c.end(ctx, messages.FinishError, why+"; no other node can run the request")
		return
	}
	c.send(ctx, next)
}

// pass passes on the part of a chunk the client has not had.
func (c *call) pass(ctx actor.Context, ch *messages.OutputChunk) {
	if ch.Done {
		if ch.Index < 0 && ch.FinishReason == messages.FinishError { // the node refused the request
			c.end(ctx, messages.FinishError, ch.Err)
			return
		}
		c.limits.boundUsage(ch)
		c.sink(ch)
		c.ended = true
		ctx.Stop(ctx.Self())
		return
	}
	if ch.Index < 0 || ch.Index >= len(c.sent) {
		return
	}
	if ch.FinishReason == messages.FinishCancelled {
		// Not by this client (its cancel ends the call): the node running
		// it is stopping.
		c.failover(ctx, fmt.Sprintf("node %s stopped", c.target.Address))
		return
	}
	sent := &c.sent[ch.Index]
	if sent.finished {
		return
	}
	out, err := splice(sent, &c.seen[ch.Index], ch)
	if err != nil {
		// Never splice different text onto what the client has: the
		// choice ends here, with what it has.
		c.n.diverged.Add(1)
		sent.finished = true
		c.sink(&messages.OutputChunk{RequestID: c.req.RequestID, Index: ch.Index, FinishReason: messages.FinishError,
			Err: fmt.Sprintf("cluster: the rerun on node %s, after a node was lost, diverged from the output sent: %v", c.target.Address, err)})
		return
	}
	if why := c.limits.overBound(sent); why != "" {
		sent.finished = true
		c.sink(&messages.OutputChunk{RequestID: c.req.RequestID, Index: ch.Index, FinishReason: messages.FinishError,
			Err: fmt.Sprintf("cluster: node %s sent %s; the choice ends here", c.target.Address, why)})
		return
	}
	if c.attempt > 1 {
		out.QueueNanos = 0
	}
	if len(out.Tokens) > 0 || out.Text != "" || out.FinishReason != "" {
		c.sink(out)
	}
}

// splice returns the part of ch, a chunk of a choice's current attempt,
// that the client has not had (sent), given what the attempt gave before
// (seen), and counts it into both. A rerun's tokens that the client has had
// already are dropped after checking that they are the same tokens; an
// error says where they differ, or that the rerun ended before them, and
// leaves sent as it was. A first attempt has seen == sent: nothing is
// dropped.
func splice(sent, seen *progress, ch *messages.OutputChunk) (*messages.OutputChunk, error) {
	skipT := min(max(sent.tokens-seen.tokens, 0), len(ch.Tokens))
	for k, tok := range ch.Tokens[:skipT] {
		if want := sent.ids[seen.tokens+k]; tok.ID != want {
			return nil, fmt.Errorf("token %d is %d, the client had %d", seen.tokens+k, tok.ID, want)
		}
	}
	if ch.FinishReason != "" && seen.tokens+len(ch.Tokens) < sent.tokens {
		return nil, fmt.Errorf("it ended (%s) after %d tokens, the client had %d", ch.FinishReason, seen.tokens+len(ch.Tokens), sent.tokens)
	}
	skipX := min(max(sent.text-seen.text, 0), len(ch.Text))
	seen.tokens += len(ch.Tokens)
	seen.text += len(ch.Text)
	out := *ch
	out.Tokens, out.Text = ch.Tokens[skipT:], ch.Text[skipX:]
	sent.tokens += len(out.Tokens)
	sent.text += len(out.Text)
	for _, t := range out.Tokens {
		sent.ids = append(sent.ids, t.ID)
	}
	if out.FinishReason != "" {
		sent.finished = true
	}
	return &out, nil
}

// end finishes every open choice with reason (and err), then the request.
func (c *call) end(ctx actor.Context, reason, err string) {
	if c.ended {
		return
	}
	c.ended = true
	if c.job == nil {
		ctx.Unwatch(c.target) // a grain lives on: leave no watch behind
	}
	for i := range c.sent {
		if !c.sent[i].finished {
			c.sent[i].finished = true
			c.sink(&messages.OutputChunk{RequestID: c.req.RequestID, Index: i, FinishReason: reason, Err: err})
		}
	}
	c.sink(&messages.OutputChunk{RequestID: c.req.RequestID, Index: -1, Done: true, Usage: &messages.Usage{PromptTokens: len(c.req.Prompt)}})
	ctx.Stop(ctx.Self())
}
