package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// StageConfig sets up a pipeline stage member (StartStage).
type StageConfig struct {
	// Stage is this member's stage, 1 to Stages-1 (stage 0 is the head's);
	// Stages how many the model is split into.
	Stage, Stages int
	// Head is the head's --advertise HOST:PORT; Advertise this member's.
	Head, Advertise string
	// Cluster, when its Name is set, is the cluster the pipeline forms in
	// (pipeline_members.go): the member finds the head in its gossip, and
	// Head is unset. Its Advertise is this Advertise.
	Cluster Config
	// Workers is the forward pass's goroutines.
	Workers int
	// Log, when set, gets what the member notices in the cluster's gossip
	// (a stage announced twice, a member of another model file).
	Log func(string)
}

// Validate checks the Config in words that name the flags.
func (cfg StageConfig) Validate() error {
	if cfg.Stages < 2 {
		return fmt.Errorf("cluster: --pipeline-stages %d: want at least 2", cfg.Stages)
	}
	if cfg.Stage < 1 || cfg.Stage >= cfg.Stages {
		return fmt.Errorf("cluster: --pipeline-stage %d: a stage member serves stage 1 to %d (stage 0 is the head)", cfg.Stage, cfg.Stages-1)
	}
	switch {
	case cfg.Cluster.Name != "" && cfg.Head != "":
		return errors.New("cluster: --pipeline-head with --cluster: the members find the head in the cluster")
	case cfg.Cluster.Name != "":
		c := cfg.Cluster
		c.Advertise = cfg.Advertise
		if err := c.Validate(); err != nil {
			return err
		}
	default:
		if _, _, err := splitHostPort(cfg.Head); err != nil {
			return fmt.Errorf("cluster: --pipeline-head %q: want HOST:PORT", cfg.Head)
		}
	}
	if _, _, err := splitHostPort(cfg.Advertise); err != nil {
		return fmt.Errorf("cluster: --advertise %q: want HOST:PORT", cfg.Advertise)
	}
	return nil
}

// StageMember is a running stage member: its stage actor computes the
// steps the head sends through its layers.
type StageMember struct {
	system   *actor.ActorSystem
	members  *pipelineMembers // in a cluster; nil: joined to cfg.Head
	head     atomic.Value     // string: the head last announced to
	joined   chan error       // the first answer to its join
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// StartStage starts a stage member on system with m, a model loaded as
// stage cfg.Stage of model.PlanStages(path, cfg.Stages): it listens on
// cfg.Advertise and announces itself to the head until the head accepts
// it (again after the head is lost). Joined says how the first join went.
func StartStage(system *actor.ActorSystem, m *model.Model, cfg StageConfig) (*StageMember, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st := m.Weights.Stage
	if st == (model.Stage{}) {
		return nil, errors.New("cluster: a stage member needs a model loaded as a stage (model.LoadOptions.Stage)")
	}
	sum, err := modelHash(m.Path)
	if err != nil {
		return nil, fmt.Errorf("cluster: hashing the model: %w", err)
	}
	id := identity{Model: sum, Device: "cpu"}
	sm := &StageMember{system: system, joined: make(chan error, 1), stop: make(chan struct{})}
	if cfg.Cluster.Name != "" {
		c := cfg.Cluster
		c.Advertise = cfg.Advertise
		if sm.members, err = joinPipeline(system, c, stageRecord{Stage: cfg.Stage, Stages: cfg.Stages, Address: cfg.Advertise, ID: id}, cfg.Log); err != nil {
			return nil, err
		}
	} else if err := startRemote(system, cfg.Advertise); err != nil {
		return nil, err
	}
	a := &stageActor{m: m, state: model.NewState(&m.Config, cfg.Workers), index: cfg.Stage, joined: sm.joined}
	// A name of its own per start: the head tells a member restarted at
	// the same address (empty KV) from the one it watched.
	self, err := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return a }), fmt.Sprintf("%s-%x", stageName, rand.Uint64()))
	if err != nil {
		return nil, fmt.Errorf("cluster: starting the stage actor: %w", err)
	}
	join := wrap(&envelope{Join: &stageJoin{Stage: cfg.Stage, Stages: cfg.Stages, Lo: st.Lo, Hi: st.Hi,
		ID: id, Actor: toPID(self)}})
	// Announce every joinInterval: until accepted, and after (the head
	// answers its member again; one that lost it, after a lost connection,
	// takes it back).
	sm.wg.Add(1)
	go func() {
		defer sm.wg.Done()
		t := time.NewTicker(joinInterval)
		defer t.Stop()
		for {
			addr := cfg.Head
			if sm.members != nil {
				addr = sm.members.Head() // "" until the gossip shows one
			}
			if addr != "" {
				sm.head.Store(addr)
				system.Root.Send(self, &sendJoin{head: actor.NewPID(addr, headName), join: join})
			}
			select {
			case <-sm.stop:
				return
			case <-t.C:
			}
		}
	}()
	return sm, nil
}

// Joined is the first answer of the head: nil when it accepted this
// member, else why it refused it (a stage already served, another model).
func (sm *StageMember) Joined() <-chan error { return sm.joined }

// Head is the address of the head this member announced itself to last
// ("" before any).
func (sm *StageMember) Head() string {
	h, _ := sm.head.Load().(string)
	return h
}

// Stop stops announcing and shuts the actor system down.
// Stop is idempotent.
func (sm *StageMember) Stop() {
	sm.stopOnce.Do(func() {
		close(sm.stop)
		sm.wg.Wait()
		if sm.members != nil {
			sm.members.leave()
		} else if r := remote.GetRemote(sm.system); r != nil {
			r.Shutdown(true)
		}
		sm.system.Shutdown()
	})
}

const (
	stageName    = "troupe-stage"
	headName     = "troupe-pipeline"
	joinInterval = time.Second
	// maxWireBytes bounds one message between pipeline members (gRPC's
	// default, 4 MiB, is less than a step's logits of a large vocabulary).
	maxWireBytes = 256 << 20
)

// startRemote starts protoactor's remote on system at advertise, with
// messages up to maxWireBytes.
func startRemote(system *actor.ActorSystem, advertise string) (err error) {
	rc, err := remoteConfig(advertise)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: listening on %s: %v", advertise, r)
		}
	}()
	remote.NewRemote(system, rc).Start()
	return nil
}

// remoteConfig is the remote layer of a pipeline member at advertise, with
// messages up to maxWireBytes.
func remoteConfig(advertise string) (*remote.Config, error) {
	host, port, err := splitHostPort(advertise)
	if err != nil {
		return nil, fmt.Errorf("cluster: --advertise %q: want HOST:PORT", advertise)
	}
	return remote.Configure(host, port,
		remote.WithServerOptions(grpc.MaxRecvMsgSize(maxWireBytes), grpc.MaxSendMsgSize(maxWireBytes)),
		remote.WithDialOptions(grpc.WithInsecure(), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxWireBytes), grpc.MaxCallSendMsgSize(maxWireBytes))),
	), nil
}

func splitHostPort(hp string) (string, int, error) {
	host, p, err := net.SplitHostPort(hp)
	if err != nil || host == "" {
		return "", 0, fmt.Errorf("want HOST:PORT")
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port")
	}
	return host, port, nil
}

// sendJoin asks the stage actor to announce itself to head. The join loop
// -> stage actor.
type sendJoin struct {
	head *actor.PID
	join *wrapperspb.BytesValue
}

// stageActor owns a stage's weights, KV cache and scratch: it runs each
// step the head (or the stage before) sends through its layers and sends
// the hidden rows on to the next stage, or the logits back to the head.
type stageActor struct {
	m      *model.Model
	state  *model.State
	cache  *kv.Cache // sized by the head's answer to the join
	index  int
	joined chan error // the first join's answer, once

	head   *actor.PID // the head that accepted this member, watched; nil: none now
	target *actor.PID // the head announced to
	once   sync.Once
	in     []float32 // (n_tokens, dim) the rows received
	out    []float32 // (n_tokens, dim) the rows sent on
	logits []float32 // (n_logits, vocab) the last stage's
}

func (a *stageActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *sendJoin:
		a.target = msg.head
		ctx.Send(msg.head, msg.join)
	case *actor.Terminated:
		a.onTerminated(msg)
	case *wrapperspb.BytesValue:
		e, err := unwrap(msg)
		switch {
		case err != nil:
			return // no troupe member sends it; a malformed step is answered by its sender's watch
		case e.Joined != nil:
			a.onJoined(ctx, e.Joined)
		case e.Step != nil:
			a.onStep(ctx, e.Step, len(msg.Value))
		}
	}
}

// onJoined: the head accepted this member (and gave the cache's shape)
// or refused it.
func (a *stageActor) onJoined(ctx actor.Context, j *stageJoined) {
	var err error
	if j.Err != "" {
		err = errors.New(j.Err)
	} else if a.cache == nil || a.cache.NumBlocks != j.NumBlocks || a.cache.BlockSize != j.BlockSize || uint8(a.cache.Type) != j.KVType {
		a.cache, err = a.m.NewStageCache(kv.CacheType(j.KVType), j.NumBlocks, j.BlockSize)
	}
	if err == nil && a.target != nil && (a.head == nil || !a.head.Equal(a.target)) {
		a.head = a.target
		ctx.Watch(a.target)
	}
	a.once.Do(func() { a.joined <- err })
}

// onTerminated: the head is gone; the next answer to the join loop's
// announcements (a head restarted at that address) watches it again.
func (a *stageActor) onTerminated(msg *actor.Terminated) {
	if a.head != nil && msg.Who.Equal(a.head) {
		a.head = nil
	}
}

// onStep runs a micro-batch (of size bytes on the wire) through the
// stage and passes it on.
func (a *stageActor) onStep(ctx actor.Context, s *stageStep, size int) {
	done := &stageDone{Step: s.Step, Micro: s.Micro, Stage: a.index}
	start := time.Now()
	cost := stageCost{InBytes: int64(size)}
	next, err := a.forward(s)
	cost.Nanos = time.Since(start).Nanoseconds()
	s.Costs = append(s.Costs, cost)
	switch {
	case err != nil:
		done.Err = fmt.Sprintf("pipeline stage %d (%s): %v", a.index, ctx.ActorSystem().Address(), err)
	case next != nil:
		ctx.Send(next.actor(), wrap(&envelope{Step: s}))
		return
	default:
		done.Logits, done.Costs = f32Bytes(a.logits), s.Costs
	}
	ctx.Send(s.ReplyTo.actor(), wrap(&envelope{Done: done}))
}

// forward runs the step's batch through the stage's layers. It leaves the
// step ready for the next stage (its hidden rows, its route), returning
// that stage, or nil after the last stage, whose logits are in a.logits.
func (a *stageActor) forward(s *stageStep) (*pid, error) {
	c := &a.m.Config
	if a.cache == nil {
		return nil, errors.New("not joined to a head")
	}
	b := s.toBatch()
	n := len(b.Tokens)
	last := len(s.Route) == 0
	if last != (a.m.Weights.Stage.Hi == c.Layers) {
		return nil, fmt.Errorf("a step routed with %d stages after layers %v of %d", len(s.Route), a.m.Weights.Stage, c.Layers)
	}
	a.in = grow(a.in, n*c.Dim)
	if err := bytesF32(a.in, s.Hidden, "hidden rows"); err != nil {
		return nil, err
	}
	if last {
		if len(b.Logits) != n {
			return nil, fmt.Errorf("a batch of %d tokens with %d logit flags", n, len(b.Logits))
		}
		a.logits = grow(a.logits, b.NumLogits()*c.VocabSize)
		return nil, a.m.ForwardStage(a.state, b, a.cache, a.in, nil, a.logits)
	}
	a.out = grow(a.out, n*c.Dim)
	if err := a.m.ForwardStage(a.state, b, a.cache, a.in, a.out, nil); err != nil {
		return nil, err
	}
	next := s.Route[0]
	s.Route, s.Hidden = s.Route[1:], f32Bytes(a.out)
	return &next, nil
}

// grow returns buf resized to n values, reusing its storage when it can.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}
