// Package cluster makes several troupe nodes serve as one, on protoactor's
// cluster: membership from a provider (etcd, or automanaged with nothing
// external), requests placed by prefix affinity through cluster identities
// (virtual actors, placed by rendezvous hashing, so a placement moves only
// when its node leaves) and by load (gossiped), output streamed back in
// batches as msgpack inside a protobuf envelope, and requests re-run on
// another node when theirs is lost.
package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

// Config sets up a Node.
type Config struct {
	// Name is the cluster's name: nodes with the same name and provider
	// form one cluster.
	Name string
	// Provider is "etcd" or "automanaged".
	Provider string
	// Advertise is the host:port this node listens on for the other nodes
	// (protoactor's remote, gRPC) and that they reach it at.
	Advertise string
	// Etcd is the etcd endpoints (Provider "etcd"); nil: 127.0.0.1:2379.
	Etcd []string
	// AutoManagedPort is this node's automanaged HTTP port and Seeds the
	// host:port of every node's (Provider "automanaged", this one included).
	AutoManagedPort int
	Seeds           []string
	// AffinityTokens is how many leading prompt tokens name a request's
	// placement; 0: 64 (four blocks of 16).
	AffinityTokens int
	// Overflow is how many more sequences (running and waiting) the
	// affinity node may have than the least loaded one before a request
	// goes to the least loaded instead; 0: 8.
	Overflow int
	// Role is what this member does with requests: "prefill", "decode" or
	// "both" ("": both). See disaggplace.go for the rule that sends a
	// prompt to a prefill member.
	Role string
	// DisaggTokens is the prompt length from which a request decoded on a
	// busy member may be prefilled on another; 0: DefaultDisaggTokens.
	DisaggTokens int
	// DisaggAlways disaggregates every request the rule allows, whatever
	// the decode member's load (the rule's "busy" clause left out).
	DisaggAlways bool
}

// Node is one member of the cluster: its runtime serves requests placed
// here, and Stream places requests anywhere.
type Node struct {
	cfg    Config
	rt     *actors.Runtime
	system *actor.ActorSystem
	c      *cluster.Cluster
	self   string // this node's address

	id identity // what every member must share

	mu      sync.Mutex
	loads   map[string]load   // by address, from gossip; refused members left out
	members []string          // addresses, from the cluster's topology events
	refused map[string]string // members of another identity: address -> theirs
	stop    chan struct{}
	wg      sync.WaitGroup

	placedLocal, placedRemote, overflowed, failovers, diverged atomic.Int64
	disagg                                                     disaggCounters // disagg.go

	relayOnce // the token bound relayed output is checked with (relaybound.go)
}

// Start joins the cluster with rt as this node's runtime. system must be
// the runtime's actor system; it becomes a cluster member.
func Start(system *actor.ActorSystem, rt *actors.Runtime, cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	host, portStr, _ := net.SplitHostPort(cfg.Advertise)
	port, _ := strconv.Atoi(portStr)
	if cfg.AffinityTokens <= 0 {
		cfg.AffinityTokens = 64
	}
	if cfg.Overflow <= 0 {
		cfg.Overflow = 8
	}
	if cfg.DisaggTokens <= 0 {
		cfg.DisaggTokens = DefaultDisaggTokens
	}
	sum, err := modelHash(rt.Model().Path)
	if err != nil {
		return nil, fmt.Errorf("cluster: hashing the model: %w", err)
	}
	provider, err := newProvider(cfg) // pipeline_members.go
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, rt: rt, system: system, id: identity{Model: sum, Device: rt.Device()},
		loads: map[string]load{}, refused: map[string]string{}, stop: make(chan struct{})}
	grainProps := actor.PropsFromProducer(func() actor.Actor { return &worker{rt: rt, id: n.id, grain: true} })
	workerProps := actor.PropsFromProducer(func() actor.Actor { return &worker{rt: rt, id: n.id} })
	remoteCfg := remote.Configure(host, port)
	clusterCfg := cluster.Configure(cfg.Name, provider, disthash.New(), remoteCfg,
		cluster.WithKinds(cluster.NewKind(workerKind, grainProps)), cluster.WithRequestTimeout(5*time.Second))
	n.c = cluster.New(system, clusterCfg)
	topology := subscribeMembers(system, &n.mu, &n.members)
	// remote.Start writes the system's address, which every spawn reads:
	// the runtime's actors must have spawned theirs first (its batcher
	// answers Stats once it has started its devices).
	if _, err := rt.Stats(10 * time.Second); err != nil {
		system.EventStream.Unsubscribe(topology)
		return nil, fmt.Errorf("cluster: the runtime: %w", err)
	}
	if err := startMember(n.c); err != nil {
		system.EventStream.Unsubscribe(topology)
		return nil, err
	}
	n.self = system.Address()
	if _, err := system.Root.SpawnNamed(workerProps, workerName); err != nil {
		n.c.Shutdown(false)
		return nil, fmt.Errorf("cluster: starting the worker: %w", err)
	}
	if _, err := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &kvPeer{n: n} }), kvName); err != nil {
		n.c.Shutdown(false)
		return nil, fmt.Errorf("cluster: starting the K/V actor: %w", err)
	}
	n.wg.Add(1)
	go n.gossipLoad()
	return n, nil
}

// Validate checks the Config (the flags a node is started with), in words
// that name them.
func (cfg Config) Validate() error {
	host, portStr, err := net.SplitHostPort(cfg.Advertise)
	if err != nil || host == "" {
		return fmt.Errorf("cluster: --advertise %q: want HOST:PORT", cfg.Advertise)
	}
	if port, err := strconv.Atoi(portStr); err != nil || port <= 0 || port > 65535 {
		return fmt.Errorf("cluster: --advertise %q: bad port", cfg.Advertise)
	}
	switch {
	case cfg.Name == "":
		return errors.New("cluster: a cluster name is required")
	case cfg.Provider != "etcd" && cfg.Provider != "automanaged":
		return fmt.Errorf("cluster: --provider %q: want etcd or automanaged", cfg.Provider)
	case cfg.Provider == "automanaged" && (cfg.AutoManagedPort <= 0 || len(cfg.Seeds) == 0):
		return errors.New("cluster: the automanaged provider needs --automanaged-port and --seeds (every node's HOST:PORT)")
	case cfg.DisaggTokens < 0:
		return fmt.Errorf("cluster: --disagg-tokens %d: want 0 (the default) or more", cfg.DisaggTokens)
	}
	return checkRole(cfg.Role)
}

// startMember is Cluster.StartMember, which panics where it fails.
func startMember(c *cluster.Cluster) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: joining: %v", r)
		}
	}()
	c.StartMember()
	return nil
}

// Stop leaves the cluster and shuts the actor system down: stop the
// runtime first.
func (n *Node) Stop() {
	close(n.stop)
	n.wg.Wait()
	n.c.Shutdown(true)
}

// Stream runs req in the cluster, as Runtime.Stream does on one node: on
// this node when placement says so, else on another, whose output comes
// back in batches. A request with no seed gets one, so that a rerun after
// a node is lost draws the same tokens.
func (n *Node) Stream(ctx context.Context, req *messages.GenerateRequest) (<-chan *messages.OutputChunk, error) {
	if err := n.rt.Check(req); err != nil {
		return nil, err
	}
	r := *req
	if !r.Sampling.HasSeed {
		r.Sampling.Seed, r.Sampling.HasSeed = rand.Uint64(), true
	}
	if r.RequestID == "" {
		r.RequestID = fmt.Sprintf("%s-%x", n.self, rand.Uint64())
	}
	target, identity := n.place(&r)
	addr := n.self
	if target != nil {
		addr = target.Address
	}
	if decode, prefill := n.planDisagg(&r, addr); prefill != "" {
		return n.streamDisagg(ctx, &r, prefill, decode)
	} else if decode != addr {
		target, identity, addr = actor.NewPID(decode, workerName), "", decode
	}
	if addr == n.self {
		n.placedLocal.Add(1)
		return n.rt.Stream(ctx, &r)
	}
	return n.streamOn(ctx, &r, target, identity), nil
}

// streamOn runs r on the worker target (the grain of identity, when set)
// of another node, its output coming back in batches.
func (n *Node) streamOn(ctx context.Context, r *messages.GenerateRequest, target *actor.PID, identity string) <-chan *messages.OutputChunk {
	n.placedRemote.Add(1)
	ch, sink, done := actors.NewOutputStream(max(r.N, 1))
	pid := n.system.Root.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return &call{n: n, req: r, sink: sink, target: target, identity: identity}
	}), "call-")
	go func() {
		select {
		case <-ctx.Done():
			n.system.Root.Send(pid, &clientCancel{reason: context.Cause(ctx).Error()})
		case <-done:
		}
	}()
	return ch
}

// place picks the worker for req: the grain of its prefix's identity (the
// node that probably caches the prefix), unless placement sends it to the
// least loaded member instead. nil: here. identity is the grain's when the
// worker is one.
func (n *Node) place(req *messages.GenerateRequest) (worker *actor.PID, identity string) {
	identity = affinityIdentity(req.Prompt, n.cfg.AffinityTokens)
	grain := n.c.Get(identity, workerKind)
	if grain == nil {
		return nil, ""
	}
	n.mu.Lock()
	_, refused := n.refused[grain.Address]
	loads := map[string]load{}
	for _, m := range n.members {
		if l, ok := n.loads[m]; ok {
			loads[m] = l
		}
	}
	n.mu.Unlock()
	if refused { // the cluster has not dropped it yet
		return nil, ""
	}
	addr, overflowed := placement(grain.Address, loads, n.cfg.Overflow)
	if !overflowed {
		return grain, identity
	}
	n.overflowed.Add(1)
	if addr == n.self {
		return nil, ""
	}
	return actor.NewPID(addr, workerName), ""
}

// failoverWorker picks the worker that reruns a request whose node was
// lost, on none of tried: the least loaded member. nil: none.
func (n *Node) failoverWorker(tried map[string]bool) *actor.PID {
	n.mu.Lock()
	var members []string
	for _, m := range n.members {
		if _, refused := n.refused[m]; !refused {
			members = append(members, m)
		}
	}
	addr := failoverTarget(members, n.loads, tried)
	n.mu.Unlock()
	if addr == "" {
		return nil
	}
	return actor.NewPID(addr, workerName)
}

// forget drops the grains this node knows on the node of p, which went
// away (the cluster does the same when the member leaves, maybe later).
func (n *Node) forget(p *actor.PID) {
	host, port, err := net.SplitHostPort(p.Address)
	if p, perr := strconv.Atoi(port); err == nil && perr == nil {
		n.c.PidCache.RemoveByMember(&cluster.Member{Host: host, Port: int32(p)})
	}
}

// affinityIdentity names a request's placement by its first tokens.
func affinityIdentity(prompt []int32, tokens int) string {
	h := fnv.New64a()
	var b [4]byte
	for _, t := range prompt[:min(len(prompt), tokens)] {
		binary.LittleEndian.PutUint32(b[:], uint32(t))
		h.Write(b[:])
	}
	return fmt.Sprintf("p-%016x", h.Sum64())
}

// decodeGossip decodes a gossiped value (msgpack in a BytesValue, as
// gossipLoad and pipelineMembers.gossip publish theirs) into v, bounds
// checked.
func decodeGossip(kv *cluster.GossipKeyValue, v any) error {
	var b wrapperspb.BytesValue
	if err := kv.GetValue().UnmarshalTo(&b); err != nil {
		return err
	}
	return decode(b.GetValue(), v)
}

// gossipLoad publishes this node's load and reads the others', every
// loadInterval.
func (n *Node) gossipLoad() {
	defer n.wg.Done()
	t := time.NewTicker(loadInterval)
	defer t.Stop()
	for {
		if st, err := n.rt.Stats(time.Second); err == nil {
			b, _ := msgpack.Marshal(load{Running: st.Running, Waiting: st.Waiting, KVUsage: st.KVCacheUsage, Address: n.self, ID: n.id, Role: n.cfg.Role})
			n.c.Gossip.SetState(loadKey, wrapperspb.Bytes(b))
		}
		if state, err := n.c.Gossip.GetState(loadKey); err == nil {
			loads := map[string]load{}
			for member, kv := range state {
				var l load
				if decodeGossip(kv, &l) != nil || l.Address == "" {
					continue
				}
				if l.ID != n.id {
					n.refuse(member, l)
					continue
				}
				loads[l.Address] = l
			}
			n.mu.Lock()
			n.loads = loads
			n.mu.Unlock()
		}
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

const loadInterval = 250 * time.Millisecond

// refuse takes the member of id member, whose gossiped load says it serves
// another model file or computes on another device, out of the cluster:
// a rerun there could not continue this node's output (nor its reruns
// this one's). The cluster's block list drops it from the topology, so no
// grain is placed there; meanwhile placement skips it.
func (n *Node) refuse(member string, l load) {
	n.mu.Lock()
	_, known := n.refused[l.Address]
	n.refused[l.Address] = l.ID.String()
	n.mu.Unlock()
	if !known {
		n.c.Remote.BlockList().Block(member)
	}
}

// Stats are the node's cluster figures. Refused is the members refused for
// serving another model file or device; Reporting the members (itself
// included) whose gossiped load this node has, the only ones placement and
// disaggregation weigh; Diverged the choices ended because a rerun did not
// give the tokens the client had.
type Stats struct {
	Members, Refused, Reporting                                int
	PlacedLocal, PlacedRemote, Overflowed, Failovers, Diverged int64
}

// Stats returns the node's cluster figures.
func (n *Node) Stats() Stats {
	n.mu.Lock()
	members, refused, reporting := len(n.members), len(n.refused), 0
	for _, m := range n.members {
		if _, ok := n.loads[m]; ok {
			reporting++
		}
	}
	n.mu.Unlock()
	return Stats{Members: members, Refused: refused, Reporting: reporting, PlacedLocal: n.placedLocal.Load(), PlacedRemote: n.placedRemote.Load(),
		Overflowed: n.overflowed.Load(), Failovers: n.failovers.Load(), Diverged: n.diverged.Load()}
}

// modelHash is the SHA-256 of the model at path: a file's content, or a
// directory's files (names and contents, in name order). It reads the whole
// model once, at Start (about a second per GB).
func modelHash(path string) (string, error) {
	h := sha256.New()
	files := []string{path}
	if st, err := os.Stat(path); err != nil {
		return "", err
	} else if st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return "", err
		}
		files = files[:0]
		for _, e := range entries {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(path, e.Name()))
				fmt.Fprintln(h, e.Name())
			}
		}
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
