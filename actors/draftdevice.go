package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/messages"
)

// draftDevice is the draft model's device actor (SpecDraft): sequences
// ask it for drafts (draftAsk) and tell it when they end (draftRelease).
// It gathers the asks that reach it together and drafts for all of them in
// the same forward passes: on the first ask it sends itself a flush, which
// its mailbox delivers after the asks already queued.
type draftDevice struct {
	r       *draftRunner
	pending []pendingAsk
}

// pendingAsk is an ask waiting for the flush, and who asked.
type pendingAsk struct {
	from *actor.PID
	ask  *draftAsk
}

// draftReply answers a draftAsk: the draft (none: decode without one).
type draftReply struct {
	Draft []int32
	// Q, when not nil, is the distribution each Draft token was drawn from
	// (a sampled request's; nil: greedy).
	Q []messages.DraftDist
}

// draftRelease tells the draft device that sequence ID has ended: its
// blocks go back to the pool.
type draftRelease struct{ ID uint64 }

// draftFlush is the device's message to itself: draft for the pending
// asks.
type draftFlush struct{}

func newDraftDevice(r *draftRunner) actor.Producer {
	return func() actor.Actor { return &draftDevice{r: r} }
}

func (d *draftDevice) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *draftAsk:
		d.pending = append(d.pending, pendingAsk{from: ctx.Sender(), ask: msg})
		if len(d.pending) == 1 {
			ctx.Send(ctx.Self(), draftFlush{})
		}
	case draftFlush:
		d.flush(ctx)
	case *draftRelease:
		// An ask of the sequence still pending is dropped: it ended.
		d.pending = dropPending(d.pending, msg.ID)
		d.r.release(msg.ID)
	case *actor.Restarting, *actor.Stopping:
		d.answerAll(ctx, nil, nil) // nobody waits on a lost ask
	}
}

// flush drafts for the pending asks and answers each.
func (d *draftDevice) flush(ctx actor.Context) {
	if len(d.pending) == 0 {
		return
	}
	asks := make([]*draftAsk, len(d.pending))
	for i, p := range d.pending {
		asks[i] = p.ask
	}
	drafts, qs := d.r.proposeAll(asks)
	d.answerAll(ctx, drafts, qs)
}

// answerAll answers every pending ask, with drafts[i] (none when drafts
// is nil), and empties the queue.
func (d *draftDevice) answerAll(ctx actor.Context, drafts [][]int32, qs [][]messages.DraftDist) {
	for i, p := range d.pending {
		reply := &draftReply{}
		if drafts != nil {
			reply.Draft = drafts[i]
		}
		if qs != nil {
			reply.Q = qs[i]
		}
		if p.from != nil {
			ctx.Send(p.from, reply)
		}
	}
	d.pending = d.pending[:0]
}

// dropPending removes sequence id's asks from pending.
func dropPending(pending []pendingAsk, id uint64) []pendingAsk {
	out := pending[:0]
	for _, p := range pending {
		if p.ask.ID != id {
			out = append(out, p)
		}
	}
	return out
}
