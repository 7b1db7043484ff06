package server

import (
	"github.com/asynkron/protoactor-go/actor"
)

// The front actor's conversation with the handlers. Handler -> front.
type (
	admit   struct{}
	release struct{}
	drain   struct{}
	ready   struct{}
)

// admitted answers admit: Err is nil when the request may go on (and must
// then send release when it is done).
type admitted struct{ Err *apiError }

// front is the HTTP front actor: the server's state (loading, ready,
// draining, as Behavior states) and its admission count, which bounds the
// requests queued behind the running ones.
type front struct {
	behavior actor.Behavior
	inFlight int
	limit    int  // running plus waiting requests admitted at most
	live     live // the live view's listeners (live.go)
}

func newFront(limit, maxListeners int, readLive func() *liveReading) actor.Producer {
	return func() actor.Actor {
		f := &front{behavior: actor.NewBehavior(), limit: limit, live: live{read: readLive, max: maxListeners}}
		f.behavior.Become(f.loading)
		return f
	}
}

func (f *front) Receive(ctx actor.Context) {
	if !f.live.receive(ctx, f.inFlight) {
		f.behavior.Receive(ctx)
	}
}

// loading: the model is not served yet.
func (f *front) loading(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *admit:
		ctx.Respond(&admitted{Err: unavailable("the model is still loading")})
	case *ready:
		f.behavior.Become(f.serving)
	case *drain:
		f.behavior.Become(f.draining)
	}
}

// serving: requests are admitted up to the limit; past it, 429.
func (f *front) serving(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *admit:
		if f.inFlight >= f.limit {
			ctx.Respond(&admitted{Err: &apiError{Status: 429, Type: "rate_limit_error", Code: strp("rate_limit_exceeded"),
				Message: "the server's request queue is full; retry later", RetryAfter: 1}})
			return
		}
		f.inFlight++
		ctx.Respond(&admitted{})
	case *release:
		f.inFlight--
	case *drain:
		f.behavior.Become(f.draining)
	}
}

// draining: no new requests; the ones in flight finish.
func (f *front) draining(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *admit:
		ctx.Respond(&admitted{Err: unavailable("the server is shutting down")})
	case *release:
		f.inFlight--
	}
}
