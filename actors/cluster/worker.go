package cluster

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

// worker is the actor that takes requests from other nodes: the grain of
// kind workerKind (placement by prefix affinity) and, under the name
// workerName, each node's own (placement by load). It starts a job per
// request, outside itself, so that a grain moved or stopped by the cluster
// does not end the jobs it started. It refuses a request from a node that
// serves another model file or computes on another kind of device: the
// output would differ from what that node's client expects.
type worker struct {
	rt    *actors.Runtime
	id    identity
	grain bool // passivated after grainIdle without a request
}

// grainIdle is how long a worker grain waits for a request before it
// stops; the next request for its identity activates it again (a node
// sees one identity per distinct prompt prefix: they must not pile up).
var grainIdle = 5 * time.Minute

const (
	workerKind = "troupe-worker"
	workerName = "troupe-worker"
)

func (w *worker) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		w.onStarted(ctx)
	case *actor.ReceiveTimeout:
		ctx.Stop(ctx.Self())
	case *wrapperspb.BytesValue:
		w.onEnvelope(ctx, msg)
	}
}

func (w *worker) onStarted(ctx actor.Context) {
	if w.grain {
		ctx.SetReceiveTimeout(grainIdle)
	}
}

// onEnvelope starts a job for a generate request.
func (w *worker) onEnvelope(ctx actor.Context, msg *wrapperspb.BytesValue) {
	e, err := unwrap(msg)
	if err != nil || e.Generate == nil {
		return // nothing to answer: a message no troupe node sends
	}
	gen := e.Generate
	if gen.From != w.id {
		ctx.Send(gen.ReplyTo.actor(), wrap(&envelope{Chunks: &chunks{ID: gen.ID, Refused: true, Chunks: []*messages.OutputChunk{{
			Index: -1, Done: true, FinishReason: messages.FinishError,
			Err: fmt.Sprintf("cluster: node %s serves %s; the request's node %s", ctx.ActorSystem().Address(), w.id, gen.From)}}}}))
		return
	}
	ctx.ActorSystem().Root.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return &job{rt: w.rt, gen: gen, replyTo: gen.ReplyTo.actor()}
	}), "job-")
}
