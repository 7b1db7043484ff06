package cluster

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/model"
)

// pipelineHead is the head's actor: it accepts stage members, watches
// them, and hands the last stage's answers to Forward.
type pipelineHead struct {
	p *Pipeline
}

func (h *pipelineHead) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Terminated:
		h.onTerminated(msg)
	case *wrapperspb.BytesValue:
		e, err := unwrap(msg)
		switch {
		case err != nil:
			return // nothing to answer: a message no troupe member sends
		case e.Join != nil:
			h.onJoin(ctx, e.Join)
		case e.Done != nil:
			e.Done.size = len(msg.Value)
			select {
			case h.p.results <- e.Done:
			default: // no Forward waits this many answers: a stale one
			}
		}
	}
}

// onJoin accepts a stage member or tells it why not. Members announce
// themselves every joinInterval: the member of a stage is answered again;
// a member for a stage whose member was lost takes it; a new member at the
// address of the stage's member (a process restarted there: another
// actor) takes its place. Either way the KV blocks written before are no
// longer every stage's (kvFresh).
func (h *pipelineHead) onJoin(ctx actor.Context, j *stageJoin) {
	p := h.p
	who := j.Actor.actor()
	refuse := func(format string, args ...any) {
		ctx.Send(who, wrap(&envelope{Joined: &stageJoined{Err: "cluster: pipeline head " + ctx.ActorSystem().Address() + ": " + fmt.Sprintf(format, args...)}}))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := (*actor.PID)(nil)
	if j.Stage >= 1 && j.Stage < len(p.members) {
		cur = p.members[j.Stage]
	}
	switch n := len(p.plan); {
	case j.Stages != n:
		refuse("it serves %d pipeline stages; the member at %s announces %d", n, j.Actor.Address, j.Stages)
		return
	case j.Stage < 1 || j.Stage >= n:
		refuse("stage %d: a member serves stage 1 to %d", j.Stage, n-1)
		return
	case j.ID != p.id:
		refuse("it serves %s; the member at %s %s", p.id, j.Actor.Address, j.ID)
		return
	case (model.Stage{Lo: j.Lo, Hi: j.Hi}) != p.plan[j.Stage]:
		refuse("stage %d is %v; the member at %s loaded layers [%d, %d)", j.Stage, p.plan[j.Stage], j.Actor.Address, j.Lo, j.Hi)
		return
	case cur != nil && !cur.Equal(who) && cur.Address != who.Address:
		refuse("stage %d of %d is already served by %s", j.Stage, n, cur.Address)
		return
	case cur != nil && !cur.Equal(who): // restarted at the same address
		ctx.Unwatch(cur)
		p.lost[j.Stage] = fmt.Errorf("cluster: pipeline stage %d (%v) at %s was lost: its member restarted", j.Stage, p.plan[j.Stage], cur.Address)
		fallthrough
	case cur == nil:
		p.members[j.Stage] = who
		ctx.Watch(who)
		if p.lost[j.Stage] != nil { // a rejoin: its layers' KV is gone
			p.fresh.reset()
			p.stats.stages[j.Stage].rejoins.Add(1)
		}
		p.setChanged()
	}
	ctx.Send(who, wrap(&envelope{Joined: &stageJoined{NumBlocks: p.cache.NumBlocks, BlockSize: p.cache.BlockSize, KVType: uint8(p.cache.Type)}}))
}

// onTerminated: a stage member is gone, and its layers' KV blocks with
// it: the steps that route through it fail, and every step until a member
// announces itself for the stage again.
func (h *pipelineHead) onTerminated(msg *actor.Terminated) {
	p := h.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, m := range p.members {
		if m != nil && m.Equal(msg.Who) {
			p.members[i] = nil
			p.lost[i] = fmt.Errorf("cluster: pipeline stage %d (%v) at %s was lost: its requests end with this error until a member serves the stage again", i, p.plan[i], m.Address)
			p.setChanged()
		}
	}
}
