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

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

var _ actors.WindowBackend = (*Pipeline)(nil)

// Pipeline is the head of a model split into pipeline stages over members:
// the runtime's one device (an actors.Backend), so that the batcher, the
// scheduler and preemption see one logical device. Forward cuts the step
// into micro-batches of whole sequences (model.SplitBatch) and streams
// them through the stages: it runs the embedding and stage 0's layers on
// micro-batch j here and sends its hidden rows to stage 1's member while
// it goes on with j+1; each member sends its rows on to the next, the last
// sends the logits back, and Forward joins them in order (GPipe's fill and
// drain within one step; see ARCHITECTURE.md).
//
// Stage members announce themselves (StartStage); the head accepts one per
// stage, for the same model file, and watches it. A stage lost ends the
// steps in flight, and those after, with an error naming it; a member that
// announces itself for it again takes it back (pipeline_head.go), and from
// then on a step that would read KV written before the loss fails instead
// (kvFresh).
type Pipeline struct {
	m     *model.Model // loaded as stage 0: its Config is the whole model's
	plan  []model.Stage
	cache *kv.Cache // stage 0's layers
	state *model.State
	bc    actors.BackendConfig
	micro atomic.Int32 // micro-batches a step is cut into at most
	// minRows is the fewest rows of a micro-batch (minMicroRows; tests
	// lower it to cut every step).
	minRows atomic.Int32

	hidden  []float32 // (n_tokens, dim) stage 0's output of one micro-batch
	results chan *stageDone

	system *actor.ActorSystem
	head   *actor.PID
	id     identity
	gossip *pipelineMembers // in a cluster (StartCluster); nil: Start

	stats pipelineCounters

	mu      sync.Mutex
	members []*actor.PID  // by stage; members[0] nil (this head)
	lost    []error       // by stage: why its member is gone; nil: never lost
	changed chan struct{} // closed and replaced when members change
	fresh   kvFresh       // the KV slots every stage holds since a member rejoined
	step    uint64
}

// stepTimeout bounds a step's wait for the last stage when no stage is
// known lost: a last resort against a hang, far above any step's time.
const stepTimeout = 10 * time.Minute

// maxMicroBatches bounds SetMicroBatches (and so the answers a step
// waits for).
const maxMicroBatches = 32

// minMicroRows is the fewest rows a micro-batch is cut to: from about 4
// rows on, a CPU forward pass costs the same per row (smollm2-135m's shape
// in Q8_0, one thread: 31 ms for 1 row, 17-18 ms a row for 4, 8 and 16),
// so a cut there loses nothing to batching; below, the weights are read
// for too few rows.
const minMicroRows = 4

// NewPipeline returns the head's backend for m, a model loaded as stage 0
// of model.PlanStages(path, stages), with a KV cache of bc's shape for its
// layers. A step is cut into as many micro-batches as there are stages
// (SetMicroBatches changes it). Start makes it reachable.
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
	p := &Pipeline{m: m, plan: plan, cache: cache, state: model.NewState(&m.Config, bc.Workers), bc: bc,
		results: make(chan *stageDone, 4*maxMicroBatches), members: make([]*actor.PID, stages), lost: make([]error, stages),
		changed: make(chan struct{}), fresh: kvFresh{blockSize: cache.BlockSize, ok: make([]bool, cache.NumBlocks*cache.BlockSize)}}
	p.stats.init(stages)
	p.micro.Store(int32(stages))
	p.minRows.Store(minMicroRows)
	return p, nil
}

// SetMicroBatches sets how many micro-batches a step is cut into at most
// (1: the step whole, no overlap of the stages); a micro-batch keeps at
// least minMicroRows rows. The default is the number of stages.
func (p *Pipeline) SetMicroBatches(n int) error {
	if n < 1 || n > maxMicroBatches {
		return fmt.Errorf("cluster: %d micro-batches a step: want 1 to %d", n, maxMicroBatches)
	}
	p.micro.Store(int32(n))
	return nil
}

// Plan is the stages' layers, by stage.
func (p *Pipeline) Plan() []model.Stage { return p.plan }

// Start listens on advertise for the stage members and accepts them. rt is
// the runtime p is the device of: its actors must have started (remote's
// start races their spawns otherwise).
func (p *Pipeline) Start(system *actor.ActorSystem, rt *actors.Runtime, advertise string) error {
	return p.start(system, rt, Config{Advertise: advertise}, nil)
}

// StartCluster is Start in the cluster of cfg (its Name, Provider and the
// provider's settings; Advertise): the head gossips that it serves stage
// 0, and the stage members find it there (pipeline_members.go). log, when
// set, gets what the gossip shows wrong (a stage announced twice, a member
// of another model file).
func (p *Pipeline) StartCluster(system *actor.ActorSystem, rt *actors.Runtime, cfg Config, log func(string)) error {
	if cfg.Name == "" {
		return errors.New("cluster: StartCluster without a cluster name")
	}
	return p.start(system, rt, cfg, log)
}

func (p *Pipeline) start(system *actor.ActorSystem, rt *actors.Runtime, cfg Config, log func(string)) error {
	sum, err := modelHash(p.m.Path)
	if err != nil {
		return fmt.Errorf("cluster: hashing the model: %w", err)
	}
	p.id = identity{Model: sum, Device: "cpu"}
	if _, err := rt.Stats(10 * time.Second); err != nil {
		return fmt.Errorf("cluster: the runtime: %w", err)
	}
	if cfg.Name != "" {
		if p.gossip, err = joinPipeline(system, cfg, stageRecord{Stage: 0, Stages: len(p.plan), Address: cfg.Advertise, ID: p.id}, log); err != nil {
			return err
		}
	} else if err := startRemote(system, cfg.Advertise); err != nil {
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
	if p.gossip != nil {
		p.gossip.leave()
		return
	}
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
		if missing == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return missing
		case <-changed:
		}
	}
}

// missing says why a step cannot run now, nil when every stage has a
// member: the first stage lost, or the stages that never had one; p.mu
// held.
func (p *Pipeline) missing() error {
	var s string
	for i := 1; i < len(p.members); i++ {
		if p.members[i] != nil {
			continue
		}
		if p.lost[i] != nil {
			return p.lost[i]
		}
		s += fmt.Sprintf("stage %d (%v) has no member; ", i, p.plan[i])
	}
	if s != "" {
		return fmt.Errorf("cluster: the pipeline is not complete: %s", s)
	}
	return nil
}

// routeLost is the error of the first stage whose member is no longer the
// one in route (by stage, from 1), nil when none; p.mu held.
func (p *Pipeline) routeLost(route []*actor.PID) error {
	for i, r := range route {
		if m := p.members[i+1]; m == nil || !m.Equal(r) {
			if p.lost[i+1] != nil {
				return p.lost[i+1]
			}
			return fmt.Errorf("cluster: pipeline stage %d (%v) changed member during the step", i+1, p.plan[i+1])
		}
	}
	return nil
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
	route, missing := append([]*actor.PID(nil), p.members[1:]...), p.missing()
	if missing == nil {
		missing = p.fresh.check(b, c.KVWindow())
	}
	p.step++
	step := p.step
	p.mu.Unlock()
	if missing != nil {
		p.stats.failed.Add(1)
		return missing
	}
	start := time.Now()
	compute := make([]int64, len(p.plan)) // (stages) nanoseconds in this step
	err := p.run(step, route, b, logits, compute)
	p.mu.Lock()
	p.fresh.mark(b, err == nil)
	p.mu.Unlock()
	p.stats.step(time.Since(start), n, compute, err == nil)
	return err
}

// run streams b's micro-batches through the stages and waits for their
// logits, adding each stage's compute time to compute.
func (p *Pipeline) run(step uint64, route []*actor.PID, b *model.Batch, logits []float32, compute []int64) error {
	c := &p.m.Config
	mbs := model.SplitBatch(b, min(int(p.micro.Load()), len(b.Tokens)/int(p.minRows.Load())), p.cache.BlockSize)
	var rest []pid
	for _, r := range route[1:] {
		rest = append(rest, toPID(r))
	}
	for j := range mbs {
		mb := &mbs[j].Batch
		rows := len(mb.Tokens) * c.Dim
		t0 := time.Now()
		p.hidden = grow(p.hidden, rows)
		if err := p.m.ForwardStage(p.state, mb, p.cache, nil, p.hidden, nil); err != nil {
			return err
		}
		ns := time.Since(t0).Nanoseconds()
		p.stats.stages[0].computeNanos.Add(ns)
		compute[0] += ns
		s := &stageStep{Step: step, Micro: j, Tokens: mb.Tokens, Positions: mb.Positions, Seq: mb.Seq, Tables: mb.BlockTables,
			Logits: mb.Logits, AttendTo: mb.AttendTo, Hidden: f32Bytes(p.hidden[:rows]), Route: rest, ReplyTo: toPID(p.head)}
		msg := wrap(&envelope{Step: s})
		p.stats.stages[1].bytesIn.Add(int64(len(msg.Value)))
		p.system.Root.Send(route[0], msg)
	}
	p.stats.microBatches.Add(int64(len(mbs)))
	timeout := time.NewTimer(stepTimeout)
	defer timeout.Stop()
	got := make([]bool, len(mbs))
	for left := len(mbs); left > 0; {
		p.mu.Lock()
		lost, changed := p.routeLost(route), p.changed
		p.mu.Unlock()
		if lost != nil {
			return lost
		}
		select {
		case d := <-p.results:
			if d.Step != step || d.Micro < 0 || d.Micro >= len(mbs) || got[d.Micro] {
				continue // a step that failed before its answer came
			}
			if d.Err != "" {
				return errors.New(d.Err)
			}
			mb := &mbs[d.Micro]
			lo, hi := mb.LogitLo*c.VocabSize, (mb.LogitLo+mb.Batch.NumLogits())*c.VocabSize
			if err := bytesF32(logits[lo:hi], d.Logits, "cluster: the last stage's logits"); err != nil {
				return err
			}
			p.stats.done(d, compute)
			got[d.Micro] = true
			left--
		case <-changed:
		case <-timeout.C:
			return fmt.Errorf("cluster: pipeline step %d: no answer from the stages in %v", step, stepTimeout)
		}
	}
	return nil
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
