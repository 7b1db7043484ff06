package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/messages"
)

// request owns one client request: it spawns a sequence per choice, relays
// their output to the client's sink as OutputChunks, counts usage, and ends
// with a Done chunk once every choice has finished, whatever happened to it.
type request struct {
	rt   *Runtime
	req  *messages.GenerateRequest
	sink func(*messages.OutputChunk) // never blocks (see Runtime.Stream)

	seqs      map[string]int // child PID id -> choice index
	pids      []*actor.PID   // (n) the sequence of each choice
	seqIDs    []uint64       // (n) their ids
	finished  []bool
	preempted []int // (n) each choice's preemptions so far
	left      int
	usage     messages.Usage
	sent      bool // the Done chunk
	// imagesLeft is the images still being encoded (request_images.go);
	// the sequences start when it reaches 0.
	imagesLeft int
}

func newRequest(rt *Runtime, req *messages.GenerateRequest, sink func(*messages.OutputChunk)) actor.Producer {
	return func() actor.Actor {
		return &request{rt: rt, req: req, sink: sink}
	}
}

func (r *request) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		r.onStarted(ctx)
	case *messages.SequenceOutput:
		r.onOutput(ctx, msg)
	case *messages.Cancel:
		r.onCancel(ctx, msg)
	case *imageEncoded:
		r.onImageEncoded(ctx, msg)
	case *actor.Terminated:
		r.onTerminated(ctx, msg)
	case *actor.Stopped:
		r.onStopped(ctx)
	}
}

func (r *request) onStarted(ctx actor.Context) {
	n := max(r.req.N, 1)
	r.seqs = make(map[string]int, n)
	r.finished = make([]bool, n)
	r.preempted = make([]int, n)
	r.left = n
	r.usage.PromptTokens = len(r.req.Prompt)
	if r.startImages(ctx) {
		return // the sequences start once the images are encoded
	}
	r.spawnSequences(ctx)
}

func (r *request) spawnSequences(ctx actor.Context) {
	for i := range len(r.finished) {
		id := r.rt.nextSeq.Add(1)
		props := actor.PropsFromProducer(newSequence(r.rt, r.req, id, i))
		pid := ctx.SpawnPrefix(props, fmt.Sprintf("seq%d-", id))
		r.seqs[pid.Id] = i
		r.pids = append(r.pids, pid)
		r.seqIDs = append(r.seqIDs, id)
	}
}

func (r *request) onOutput(ctx actor.Context, out *messages.SequenceOutput) {
	if out.Index < 0 || out.Index >= len(r.finished) || r.finished[out.Index] {
		return
	}
	r.usage.CompletionTokens += len(out.Tokens)
	r.usage.Preemptions += out.Preemptions
	r.usage.DraftTokens += out.Drafted
	r.usage.AcceptedDraftTokens += out.Accepted
	r.preempted[out.Index] += out.Preemptions
	if out.Index == 0 {
		r.usage.CachedTokens = max(r.usage.CachedTokens, out.NumCachedTokens)
	}
	c := &messages.OutputChunk{RequestID: r.req.RequestID, Index: out.Index, Tokens: out.Tokens,
		Text: out.Text, FinishReason: out.FinishReason, Err: out.Err, Invalid: out.Invalid, QueueNanos: out.QueueNanos, StopString: out.StopString}
	if out.FinishReason != "" {
		c.Preemptions = r.preempted[out.Index]
	}
	r.sink(c)
	if out.FinishReason != "" {
		r.finish(ctx, out.Index)
	}
}

// finish records that choice index is over and stops its sequence.
func (r *request) finish(ctx actor.Context, index int) {
	r.finished[index] = true
	ctx.Stop(r.pids[index])
	if r.left--; r.left == 0 {
		r.sendDone()
		ctx.Stop(ctx.Self())
	}
}

func (r *request) sendDone() {
	if !r.sent {
		r.sent = true
		u := r.usage
		r.sink(&messages.OutputChunk{RequestID: r.req.RequestID, Index: -1, Done: true, Usage: &u})
	}
}

func (r *request) onCancel(ctx actor.Context, c *messages.Cancel) {
	if r.imagesLeft > 0 {
		r.endAll(ctx, messages.FinishCancelled, c.Reason)
		return
	}
	for i, pid := range r.pids {
		if !r.finished[i] {
			ctx.Send(pid, c)
		}
	}
}

// onTerminated catches a sequence that stopped before its last output (it
// failed, and its supervisor stopped it): its choice ends with an error, and
// the batcher is told to free its blocks, so nothing is lost or leaked.
func (r *request) onTerminated(ctx actor.Context, t *actor.Terminated) {
	i, ok := r.seqs[t.Who.Id]
	if !ok || r.finished[i] {
		return
	}
	r.sink(&messages.OutputChunk{RequestID: r.req.RequestID, Index: i, FinishReason: messages.FinishError,
		Err: "the sequence failed", Preemptions: r.preempted[i]})
	ctx.Send(r.rt.batcher, &messages.Cancel{SeqID: r.seqIDs[i], Reason: "sequence failed"})
	r.finish(ctx, i)
}

func (r *request) onStopped(ctx actor.Context) {
	// Stopped without finishing (the system is shutting down): the client
	// still gets its Done chunk.
	for i, f := range r.finished {
		if !f {
			r.sink(&messages.OutputChunk{RequestID: r.req.RequestID, Index: i, FinishReason: messages.FinishError,
				Err: "the runtime stopped", Preemptions: r.preempted[i]})
		}
	}
	r.sendDone()
	r.rt.requestEnded(ctx.Self())
}
