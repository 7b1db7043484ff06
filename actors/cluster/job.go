package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

// job runs one request for another node and sends its output there in
// batches. It watches the requesting actor: when that actor or its node
// is gone, the job is cancelled.
type job struct {
	rt      *actors.Runtime
	gen     *generate
	replyTo *actor.PID
	cancel  context.CancelCauseFunc
}

// batchLinger is how long a job waits for more output before it sends what
// it has: at most one message per this interval and request, whatever the
// number of tokens.
const batchLinger = time.Millisecond

// jobDone tells a job its request has ended. The job's forward goroutine
// -> job.
type jobDone struct{}

func (j *job) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		j.onStarted(ctx)
	case *wrapperspb.BytesValue:
		j.onEnvelope(msg)
	case *actor.Terminated:
		j.onTerminated(msg)
	case *jobDone:
		ctx.Stop(ctx.Self())
	case *actor.Stopped:
		j.onStopped()
	}
}

// onStarted starts the request on this node's runtime and a goroutine
// that forwards its output.
func (j *job) onStarted(ctx actor.Context) {
	ctx.Watch(j.replyTo)
	run, cancel := context.WithCancelCause(context.Background())
	j.cancel = cancel
	self, root := ctx.Self(), ctx.ActorSystem().Root
	ch, err := j.rt.Stream(run, &j.gen.Req)
	if err != nil {
		root.Send(j.replyTo, wrap(&envelope{Chunks: &chunks{ID: j.gen.ID, Job: ptr(toPID(self)),
			Chunks: []*messages.OutputChunk{{Index: -1, Done: true, FinishReason: messages.FinishError, Err: err.Error()}}}}))
		ctx.Stop(self)
		return
	}
	go j.forward(root, self, ch)
}

// onEnvelope takes a cancel from the requesting node.
func (j *job) onEnvelope(msg *wrapperspb.BytesValue) {
	if e, err := unwrap(msg); err == nil && e.Cancel != nil {
		j.cancel(errors.New(e.Cancel.Reason))
	}
}

func (j *job) onTerminated(msg *actor.Terminated) {
	if msg.Who.Equal(j.replyTo) {
		j.cancel(errors.New("the requesting node went away"))
	}
}

func (j *job) onStopped() {
	if j.cancel != nil {
		j.cancel(errors.New("the job stopped"))
	}
}

// forward sends the request's output to the requesting actor, each message
// holding every chunk ready by then (and those that come within
// batchLinger), the first naming the job.
func (j *job) forward(root *actor.RootContext, self *actor.PID, ch <-chan *messages.OutputChunk) {
	first := true
	for c := range ch {
		batch := []*messages.OutputChunk{c}
		linger := time.NewTimer(batchLinger)
	more:
		for !batch[len(batch)-1].Done && len(batch) < 256 {
			select {
			case c, ok := <-ch:
				if !ok {
					break more
				}
				batch = append(batch, c)
			case <-linger.C:
				break more
			}
		}
		linger.Stop()
		out := &chunks{ID: j.gen.ID, Chunks: batch}
		if first {
			out.Job, first = ptr(toPID(self)), false
		}
		root.Send(j.replyTo, wrap(&envelope{Chunks: out}))
	}
	root.Send(self, &jobDone{})
}

func ptr[T any](v T) *T { return &v }
