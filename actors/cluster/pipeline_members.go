package cluster

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/vmihailenco/msgpack/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// A pipeline formed through a cluster (--cluster with --pipeline-stages):
// every member, head and stage members alike, joins the cluster of
// Config.Name through its provider (etcd or automanaged) and gossips which
// stage it serves (stageRecord). A stage member finds the head in the
// gossip, the member of stage 0 with the same stage count and model file,
// instead of --pipeline-head, and announces itself to it with the join of
// stage.go; the head accepts or refuses it exactly as it does a member
// given --pipeline-head (one per stage, the first kept; the same model
// file; the same layers). A member that leaves the cluster is lost as
// before (the head watches its stage actor); one that comes back finds the
// head again in the gossip and takes its stage back.

// stageRecord is what a pipeline member gossips under stageKey.
type stageRecord struct {
	Stage, Stages int
	Address       string // its --advertise: the head's actor is there (stage 0)
	ID            identity
}

const stageKey = "troupe-pipeline-stage"

// pipelineMembers is a pipeline member's part in the cluster: its
// membership and the stage records of the members in the topology.
type pipelineMembers struct {
	c    *cluster.Cluster
	self stageRecord
	log  func(string) // what it noticed in the gossip (a stage announced twice, another model); nil: nothing

	mu      sync.Mutex
	members []string               // addresses, from the topology events
	records map[string]stageRecord // by address, members in the topology only
	noticed map[string]bool        // the lines logged already
	head    string                 // the head's address kept; "": none seen yet

	topology *eventstream.Subscription
	stop     chan struct{}
	wg       sync.WaitGroup
}

// joinPipeline joins the cluster of cfg on system as the member that
// serves self's stage (its remote listening on cfg.Advertise, with
// messages up to maxWireBytes) and starts gossiping.
func joinPipeline(system *actor.ActorSystem, cfg Config, self stageRecord, log func(string)) (*pipelineMembers, error) {
	provider, err := newProvider(cfg)
	if err != nil {
		return nil, err
	}
	rc, err := remoteConfig(cfg.Advertise)
	if err != nil {
		return nil, err
	}
	pm := &pipelineMembers{self: self, log: log, records: map[string]stageRecord{}, noticed: map[string]bool{}, stop: make(chan struct{})}
	pm.c = cluster.New(system, cluster.Configure(cfg.Name, provider, disthash.New(), rc, cluster.WithRequestTimeout(5*time.Second)))
	pm.topology = subscribeMembers(system, &pm.mu, &pm.members)
	if err := startMember(pm.c); err != nil {
		system.EventStream.Unsubscribe(pm.topology)
		return nil, err
	}
	pm.wg.Add(1)
	go pm.gossip()
	return pm, nil
}

// newProvider is the cluster provider cfg names: etcd (at cfg.Etcd, else
// 127.0.0.1:2379) or automanaged (seeds.go).
func newProvider(cfg Config) (cluster.ClusterProvider, error) {
	switch cfg.Provider {
	case "etcd":
		eps := cfg.Etcd
		if len(eps) == 0 {
			eps = []string{"127.0.0.1:2379"}
		}
		p, err := etcd.NewWithConfig("/troupe", clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("cluster: etcd at %v: %w", eps, err)
		}
		return p, nil
	case "automanaged":
		if cfg.AutoManagedPort <= 0 || len(cfg.Seeds) == 0 {
			return nil, fmt.Errorf("cluster: the automanaged provider needs --automanaged-port and --seeds (every member's HOST:PORT)")
		}
		return newSeedProvider(cfg.AutoManagedPort, cfg.Seeds), nil
	}
	return nil, fmt.Errorf("cluster: --provider %q: want etcd or automanaged", cfg.Provider)
}

// subscribeMembers keeps *members the addresses of the cluster's topology
// events, under mu, set in the goroutine that publishes them
// (MemberList.Members() reads them without its lock).
func subscribeMembers(system *actor.ActorSystem, mu *sync.Mutex, members *[]string) *eventstream.Subscription {
	return system.EventStream.Subscribe(func(ev any) {
		if t, ok := ev.(*cluster.ClusterTopology); ok {
			var addrs []string
			for _, m := range t.Members {
				addrs = append(addrs, m.Address())
			}
			mu.Lock()
			*members = addrs
			mu.Unlock()
		}
	})
}

// gossip publishes this member's record and reads the others', every
// loadInterval.
func (pm *pipelineMembers) gossip() {
	defer pm.wg.Done()
	mine, _ := msgpack.Marshal(pm.self)
	t := time.NewTicker(loadInterval)
	defer t.Stop()
	for {
		pm.c.Gossip.SetState(stageKey, wrapperspb.Bytes(mine))
		if state, err := pm.c.Gossip.GetState(stageKey); err == nil {
			pm.read(state)
		}
		select {
		case <-pm.stop:
			return
		case <-t.C:
		}
	}
}

// read takes the records of the members in the topology from state, and
// logs (once each) a stage announced by two members and a member of
// another pipeline or model file.
func (pm *pipelineMembers) read(state map[string]*cluster.GossipKeyValue) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	records := map[string]stageRecord{}
	for _, kv := range state {
		var r stageRecord
		if decodeGossip(kv, &r) != nil || r.Address == "" {
			continue
		}
		if slices.Contains(pm.members, r.Address) || r.Address == pm.self.Address {
			records[r.Address] = r
		}
	}
	pm.records = records
	addrs := make([]string, 0, len(records))
	for a := range records {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	byStage := map[int]string{}
	for _, a := range addrs {
		r := records[a]
		switch {
		case r.Stages != pm.self.Stages:
			pm.notice(fmt.Sprintf("cluster: the member at %s serves a pipeline of %d stages, this one %d: it is not part of this pipeline", a, r.Stages, pm.self.Stages))
			continue
		case r.ID != pm.self.ID:
			pm.notice(fmt.Sprintf("cluster: the member at %s serves %s, this one %s: refused", a, r.ID, pm.self.ID))
			continue
		}
		if other, ok := byStage[r.Stage]; ok {
			pm.notice(fmt.Sprintf("cluster: pipeline stage %d is announced by %s and %s: the head keeps the member that joined first and refuses the other", r.Stage, other, a))
			continue
		}
		byStage[r.Stage] = a
	}
	// The head: the one kept while it is a member, else a stage 0 of the
	// same stage count, of the same model file if there is one (a head of
	// another one refuses this member with an error that says so).
	if _, ok := records[pm.head]; !ok || pm.head == "" {
		pm.head = ""
		for _, sameID := range []bool{true, false} {
			for _, a := range addrs {
				if r := records[a]; pm.head == "" && r.Stage == 0 && r.Stages == pm.self.Stages && (r.ID == pm.self.ID || !sameID) {
					pm.head = a
				}
			}
		}
	}
}

// notice logs line once; pm.mu held.
func (pm *pipelineMembers) notice(line string) {
	if pm.log == nil || pm.noticed[line] {
		return
	}
	pm.noticed[line] = true
	pm.log(line)
}

// Head is the address of the pipeline's head in the gossip, "" while none
// is seen.
func (pm *pipelineMembers) Head() string {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return pm.head
}

// Stages is the stages announced by the members in the topology, by
// address.
func (pm *pipelineMembers) Stages() map[string]int {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	out := map[string]int{}
	for a, r := range pm.records {
		out[a] = r.Stage
	}
	return out
}

// leave stops gossiping and leaves the cluster: its provider, its gossip
// and the remote layer (not the actor system, which its owner shuts down).
func (pm *pipelineMembers) leave() {
	close(pm.stop)
	pm.wg.Wait()
	pm.c.ActorSystem.EventStream.Unsubscribe(pm.topology)
	_ = pm.c.Config.ClusterProvider.Shutdown(true)
	pm.c.Gossip.Shutdown()
	pm.c.Remote.Shutdown(true)
}
