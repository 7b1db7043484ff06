package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
)

// seedProvider is the "automanaged" membership, with nothing external:
// every node serves its identity at http://HOST:PORT/_health (HOST the
// host it advertises, PORT --automanaged-port) and asks every seed's each
// seedInterval; the topology is the nodes that answer, with the same
// name. The wire (the path and its JSON) is protoactor's automanaged
// provider's, which it replaces: that one takes a member out of the
// topology at its first health check over 2 s (a loaded machine, a GC
// pause), and protoactor blocks a member that left for the rest of its
// life, so one slow answer lost a node until it restarted; it also
// listened on every interface, and reported a taken port only in a log.
//
// Here a seed that does not answer in time stays a member for seedGrace
// after its last answer (several missed checks); one that refuses the
// connection (its process is gone) or answers that it is leaving is out
// at once, so a stopped or killed node fails over as fast as before.
type seedProvider struct {
	port  int
	seeds []string
	http  *http.Client

	c    *cluster.Cluster
	self seedNode
	srv  *http.Server
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	leaving bool
	seen    map[string]seenNode // by seed
}

// seedNode is what /_health answers (protoactor's automanaged NodeModel).
type seedNode struct {
	ID             string   `json:"id"`
	Address        string   `json:"address"`
	AutoManagePort int      `json:"auto_manage_port"`
	Port           int      `json:"port"`
	Kinds          []string `json:"kinds"`
	ClusterName    string   `json:"cluster_name"`
}

type seenNode struct {
	node seedNode
	at   time.Time
}

const (
	seedInterval = time.Second
	seedTimeout  = 5 * time.Second
	seedGrace    = 15 * time.Second
)

func newSeedProvider(port int, seeds []string) *seedProvider {
	return &seedProvider{port: port, seeds: seeds, http: &http.Client{}, stop: make(chan struct{}), seen: map[string]seenNode{}}
}

func (p *seedProvider) init(c *cluster.Cluster) error {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return err
	}
	p.c = c
	p.self = seedNode{ID: c.ActorSystem.ID, Address: host, AutoManagePort: p.port, Port: port, Kinds: c.GetClusterKinds(), ClusterName: c.Config.Name}
	return nil
}

// StartMember serves this node's /_health on its advertised host (an
// error now if the port is taken) and starts watching the seeds.
func (p *seedProvider) StartMember(c *cluster.Cluster) error {
	if err := p.init(c); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(p.self.Address, strconv.Itoa(p.port)))
	if err != nil {
		return fmt.Errorf("cluster: --automanaged-port: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_health", p.health)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: seedTimeout}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		p.srv.Serve(ln) // returns at Shutdown's Close
	}()
	go p.watch()
	return nil
}

// StartClient watches the seeds without being one.
func (p *seedProvider) StartClient(c *cluster.Cluster) error {
	if err := p.init(c); err != nil {
		return err
	}
	p.wg.Add(1)
	go p.watch()
	return nil
}

// Shutdown answers 503 from now on, stops watching and closes the server.
func (p *seedProvider) Shutdown(bool) error {
	p.mu.Lock()
	if p.leaving {
		p.mu.Unlock()
		return nil
	}
	p.leaving = true
	p.mu.Unlock()
	close(p.stop)
	if p.srv != nil {
		p.srv.Close()
	}
	p.wg.Wait()
	return nil
}

func (p *seedProvider) health(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	leaving := p.leaving
	p.mu.Unlock()
	if leaving {
		http.Error(w, "leaving", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(p.self)
}

// watch asks the seeds every seedInterval and publishes the topology.
func (p *seedProvider) watch() {
	defer p.wg.Done()
	for {
		p.c.MemberList.UpdateClusterTopology(p.check(time.Now()))
		select {
		case <-p.stop:
			return
		case <-time.After(seedInterval):
		}
	}
}

// seedAnswer is one seed's answer to a check: its node, or gone (it
// refused the connection or said it is leaving), or neither (no answer in
// time: it keeps its last one for seedGrace).
type seedAnswer struct {
	node *seedNode
	gone bool
}

// check asks every seed at once and returns the members: the seeds that
// answered with this cluster's name now or within seedGrace before now.
func (p *seedProvider) check(now time.Time) cluster.Members {
	answers := make([]seedAnswer, len(p.seeds))
	var wg sync.WaitGroup
	for i, seed := range p.seeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = p.ask(seed)
		}()
	}
	wg.Wait()
	return p.members(now, answers)
}

// members records answers (by seed, in p.seeds' order) seen at now and
// returns the members they leave.
func (p *seedProvider) members(now time.Time, answers []seedAnswer) cluster.Members {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ms cluster.Members
	for i, seed := range p.seeds {
		switch a := answers[i]; {
		case a.node != nil:
			p.seen[seed] = seenNode{node: *a.node, at: now}
		case a.gone:
			delete(p.seen, seed)
		}
		s, ok := p.seen[seed]
		if !ok || now.Sub(s.at) > seedGrace || s.node.ClusterName != p.self.ClusterName {
			continue
		}
		ms = append(ms, &cluster.Member{Id: s.node.ID, Host: s.node.Address, Port: int32(s.node.Port), Kinds: s.node.Kinds})
	}
	return ms
}

// ask is one health check of seed.
func (p *seedProvider) ask(seed string) seedAnswer {
	ctx, cancel := context.WithTimeout(context.Background(), seedTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+seed+"/_health", nil)
	if err != nil {
		return seedAnswer{gone: true}
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return seedAnswer{gone: errors.Is(err, syscall.ECONNREFUSED)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return seedAnswer{gone: true}
	}
	var n seedNode
	if json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<16)).Decode(&n) != nil || n.ID == "" {
		return seedAnswer{}
	}
	return seedAnswer{node: &n}
}
