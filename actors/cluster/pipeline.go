package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

var _ actors.WindowBackend = (*Pipeline)(nil)

// Pipeline is the head of a model split into pipeline stages over members:
// the runtime's one device (an actors.Backend), so that the batcher, the
// scheduler and preemption see one logical device. Forward runs the
// embedding and stage 0's layers here, sends the hidden rows to stage 1's
// member, which sends its own to stage 2's, and so on; the last stage
// sends the logits back. One micro-batch (the runtime's step) is in flight
// at a time: while one stage computes, the others wait (see ARCHITECTURE.md
// for what overlapping them would take).
//
// Stage members announce themselves (StartStage); the head accepts one per
// stage, for the same model file, and watches it. A stage lost ends the
// step in flight with an error and every later one: its KV blocks went
// with it, which the runtime's prefix cache still counts on.
type Pipeline struct {
	m     *model.Model // loaded as stage 0: its Config is the whole model's
	plan  []model.Stage
	cache *kv.Cache // stage 0's layers
	state *model.State
	bc    actors.BackendConfig

	hidden  []float32 // (n_tokens, dim) stage 0's output
	results chan *stageDone

	system *actor.ActorSystem
	head   *actor.PID
	id     identity

	steps, tokens, bytesSent, bytesReceived atomic.Int64
	localNanos, remoteNanos                 atomic.Int64

	mu      sync.Mutex
	members []*actor.PID  // by stage; members[0] nil (this head)
	changed chan struct{} // closed and replaced when members change
	broken  error         // a stage was lost: every step fails
	step    uint64
}

// stepTimeout bounds a step's wait for the last stage when no stage is
// known lost: a last resort against a hang, far above any step's time.
const stepTimeout = 10 * time.Minute

// NewPipeline returns the head's backend for m, a model loaded as stage 0
// of model.PlanStages(path, stages), with a KV cache of bc's shape for its
// layers. Start makes it reachable.
func NewPipeline(m *model.Model, stages int, bc actors.BackendConfig) (*Pipeline, error) {
	plan, err := model.PlanStages(m.Path, stages)
	if err != nil {
		return nil, err
	}
	if m.Weights.Stage != plan[0] {
		return nil, fmt.Errorf("cluster: the head's model is loaded as %v, stage 0 of %d is %v", m.Weights.Stage, stages, plan[0])
	}
	if bc.NumHostBlocks > 0 {
		return nil, errors.New("cluster: a pipeline does not swap KV blocks (--preemption swap): its stages' blocks are on other members")
	}
	cache, err := m.NewStageCache(bc.KVCacheType, bc.NumBlocks, bc.BlockSize)
	if err != nil {
		return nil, err
	}
	return &Pipeline{m: m, plan: plan, cache: cache, state: model.NewState(&m.Config, bc.Workers), bc: bc,
		results: make(chan *stageDone, 16), members: make([]*actor.PID, stages), changed: make(chan struct{})}, nil
}

// PipelineStats are a pipeline head's counters since it started: steps and
// their tokens; the hidden rows it sent (float32 bytes; each further stage
// sends as many on) and the logits it received; the time in its own
// stage and the time waiting for the others (their compute and the
// transfers: with one step in flight, the head's stage idles meanwhile).
type PipelineStats struct {
	Steps, Tokens            int64
	BytesSent, BytesReceived int64
	LocalTime, RemoteTime    time.Duration
}

// Stats returns the head's counters.
func (p *Pipeline) Stats() PipelineStats {
	return PipelineStats{Steps: p.steps.Load(), Tokens: p.tokens.Load(), BytesSent: p.bytesSent.Load(), BytesReceived: p.bytesReceived.Load(),
		LocalTime: time.Duration(p.localNanos.Load()), RemoteTime: time.Duration(p.remoteNanos.Load())}
}

// Plan is the stages' layers, by stage.
func (p *Pipeline) Plan() []model.Stage { return p.plan }

// Start listens on advertise for the stage members and accepts them. rt is
// the runtime p is the device of: its actors must have started (remote's
// start races their spawns otherwise).
func (p *Pipeline) Start(system *actor.ActorSystem, rt *actors.Runtime, advertise string) error {
	sum, err := modelHash(p.m.Path)
	if err != nil {
		return fmt.Errorf("cluster: hashing the model: %w", err)
	}
	p.id = identity{Model: sum, Device: "cpu"}
	if _, err := rt.Stats(10 * time.Second); err != nil {
		return fmt.Errorf("cluster: the runtime: %w", err)
	}
	if err := startRemote(system, advertise); err != nil {
		return err
	}
	p.system = system
	p.head, err = system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &pipelineHead{p: p} }), headName)
	if err != nil {
		return fmt.Errorf("cluster: starting the pipeline's head: %w", err)
	}
	return nil
}

// Stop shuts the remote layer down (the caller stops the runtime first,
// then the actor system).
func (p *Pipeline) Stop() {
	if p.system != nil {
		if r := remote.GetRemote(p.system); r != nil {
			r.Shutdown(true)
		}
	}
}

// WaitReady waits until every stage has a member, or ctx ends.
func (p *Pipeline) WaitReady(ctx context.Context) error {
	for {
		p.mu.Lock()
		missing, changed := p.missing(), p.changed
		p.mu.Unlock()
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: the pipeline is not complete: %s", missing)
		case <-changed:
		}
	}
}

// missing names the stages with no member, "" when none; p.mu held.
func (p *Pipeline) missing() string {
	var s string
	for i := 1; i < len(p.members); i++ {
		if p.members[i] == nil {
			s += fmt.Sprintf("stage %d (%v) has no member; ", i, p.plan[i])
		}
	}
	return s
}

func (p *Pipeline) Forward(b *model.Batch, logits []float32) error {
	c := &p.m.Config
	n := len(b.Tokens)
	if len(b.LoRA) != 0 || len(b.Hidden) != 0 {
		return errors.New("cluster: a pipeline runs neither LoRA adapters nor embeddings")
	}
	if n == 0 {
		return nil
	}
	if rows := max(n*c.Dim, b.NumLogits()*c.VocabSize); 4*rows > maxWireBytes-1<<20 {
		return fmt.Errorf("cluster: a step of %d tokens and %d logit rows is more than a pipeline message holds (%d MiB): fewer --max-num-batched-tokens or --max-num-seqs", n, b.NumLogits(), maxWireBytes>>20)
	}
	p.mu.Lock()
	route, broken, missing := append([]*actor.PID(nil), p.members[1:]...), p.broken, p.missing()
	p.step++
	step := p.step
	p.mu.Unlock()
	if broken != nil {
		return broken
	}
	if missing != "" {
		return fmt.Errorf("cluster: the pipeline is not complete: %s", missing)
	}
	start := time.Now()
	p.hidden = grow(p.hidden, n*c.Dim)
	if err := p.m.ForwardStage(p.state, b, p.cache, nil, p.hidden, nil); err != nil {
		return err
	}
	sent := time.Now()
	p.localNanos.Add(sent.Sub(start).Nanoseconds())
	defer func() { p.remoteNanos.Add(time.Since(sent).Nanoseconds()) }()
	p.steps.Add(1)
	p.tokens.Add(int64(n))
	p.bytesSent.Add(int64(4 * n * c.Dim))
	s := &stageStep{Step: step, Tokens: b.Tokens, Positions: b.Positions, Seq: b.Seq, Tables: b.BlockTables,
		Logits: b.Logits, Hidden: f32Bytes(p.hidden[:n*c.Dim]), ReplyTo: toPID(p.head)}
	for _, r := range route[1:] {
		s.Route = append(s.Route, toPID(r))
	}
	p.system.Root.Send(route[0], wrap(&envelope{Step: s}))
	timeout := time.NewTimer(stepTimeout)
	defer timeout.Stop()
	for {
		p.mu.Lock()
		broken, changed := p.broken, p.changed
		p.mu.Unlock()
		if broken != nil {
			return broken
		}
		select {
		case d := <-p.results:
			if d.Step != step {
				continue // a step that failed before its answer came
			}
			if d.Err != "" {
				return errors.New(d.Err)
			}
			p.bytesReceived.Add(int64(len(d.Logits)))
			return bytesF32(logits[:b.NumLogits()*c.VocabSize], d.Logits, "cluster: the last stage's logits")
		case <-changed:
		case <-timeout.C:
			return fmt.Errorf("cluster: pipeline step %d: no answer from the stages in %v", step, stepTimeout)
		}
	}
}

// KVWindow is the model's: every stage reads only each layer's window.
func (p *Pipeline) KVWindow() int      { return p.m.Config.KVWindow() }
func (p *Pipeline) VocabSize() int     { return p.m.Config.VocabSize }
func (p *Pipeline) DeviceKind() string { return "cpu" }
func (p *Pipeline) NumBlocks() int     { return p.cache.NumBlocks }
func (p *Pipeline) BlockSize() int     { return p.cache.BlockSize }
func (p *Pipeline) NumHostBlocks() int { return 0 }

func (p *Pipeline) SwapOut([]messages.BlockCopy) error {
	return errors.New("cluster: a pipeline does not swap KV blocks")
}

func (p *Pipeline) SwapIn([]messages.BlockCopy) error {
	return errors.New("cluster: a pipeline does not swap KV blocks")
}

// setChanged wakes the waiters on p.changed; p.mu held.
func (p *Pipeline) setChanged() {
	close(p.changed)
	p.changed = make(chan struct{})
}

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
			select {
			case h.p.results <- e.Done:
			default: // no Forward waits this many answers: a stale one
			}
		}
	}
}

// onJoin accepts a stage member or tells it why not.
func (h *pipelineHead) onJoin(ctx actor.Context, j *stageJoin) {
	p := h.p
	who := j.Actor.actor()
	refuse := func(format string, args ...any) {
		ctx.Send(who, wrap(&envelope{Joined: &stageJoined{Err: "cluster: pipeline head " + ctx.ActorSystem().Address() + ": " + fmt.Sprintf(format, args...)}}))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch n := len(p.plan); {
	case j.Stages != n:
		refuse("it serves %d pipeline stages; the member at %s announces %d", n, j.Actor.Address, j.Stages)
	case j.Stage < 1 || j.Stage >= n:
		refuse("stage %d: a member serves stage 1 to %d", j.Stage, n-1)
	case j.ID != p.id:
		refuse("it serves %s; the member at %s %s", p.id, j.Actor.Address, j.ID)
	case (model.Stage{Lo: j.Lo, Hi: j.Hi}) != p.plan[j.Stage]:
		refuse("stage %d is %v; the member at %s loaded layers [%d, %d)", j.Stage, p.plan[j.Stage], j.Actor.Address, j.Lo, j.Hi)
	case p.broken != nil:
		refuse("%v", p.broken)
	case p.members[j.Stage] != nil && !p.members[j.Stage].Equal(who):
		refuse("stage %d of %d is already served by %s", j.Stage, n, p.members[j.Stage].Address)
	default:
		if p.members[j.Stage] == nil {
			p.members[j.Stage] = who
			ctx.Watch(who)
			p.setChanged()
		}
		ctx.Send(who, wrap(&envelope{Joined: &stageJoined{NumBlocks: p.cache.NumBlocks, BlockSize: p.cache.BlockSize, KVType: uint8(p.cache.Type)}}))
	}
}

// onTerminated: a stage member is gone. Its layers' KV blocks went with
// it, so the pipeline fails every step from now on.
func (h *pipelineHead) onTerminated(msg *actor.Terminated) {
	p := h.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, m := range p.members {
		if m != nil && m.Equal(msg.Who) {
			p.members[i] = nil
			if p.broken == nil {
				p.broken = fmt.Errorf("cluster: pipeline stage %d (%v) at %s was lost: its KV blocks went with it; restart the pipeline", i, p.plan[i], m.Address)
			}
			p.setChanged()
		}
	}
}
