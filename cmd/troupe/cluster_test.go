package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/internal/freeport"
	"github.com/troupe-llm/troupe/internal/promtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// startEtcd runs an etcd server on 127.0.0.1 for the test and returns its
// client address. Without the etcd binary (Debian's etcd-server; make
// testdata installs it) the test is skipped, or fails under CI=true.
func startEtcd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("etcd is not installed (apt-get install etcd-server; make testdata does it)")
		}
		t.Skip("etcd is not installed (apt-get install etcd-server; make testdata does it)")
	}
	ports := freeport.Ports(t, 2)
	client := "127.0.0.1:" + strconv.Itoa(ports[0])
	peer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	cmd := exec.Command(bin, "--data-dir", filepath.Join(t.TempDir(), "etcd"), "--name", "t",
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "t="+peer)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(2 * time.Minute); ; { // a hang, not a slow machine
		resp, err := http.Get("http://" + client + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return client
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd did not start: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type clusterNode struct {
	url string
	cmd *exec.Cmd
}

// startCluster starts n troupe serve processes on stories260K that join one
// cluster through etcd, and waits until each sees all n members.
func startCluster(t *testing.T, bin, etcd string, n int) []*clusterNode {
	return startClusterWith(t, bin, freeport.Ports(t, n), func(int) []string { return []string{"--provider", "etcd", "--etcd", etcd} })
}

// startClusterWith starts a node for each of the ports, node i advertising
// ports[i] with the membership flags provider(i), and waits until each
// sees all the members.
func startClusterWith(t *testing.T, bin string, ports []int, provider func(i int) []string) []*clusterNode {
	t.Helper()
	stories := testmodels.Path(t, "stories260K.gguf")
	n := len(ports)
	var nodes []*clusterNode
	for i := range n {
		args := append([]string{"-m", stories, "--cluster", "t", "--advertise", "127.0.0.1:" + strconv.Itoa(ports[i]),
			"--shutdown-grace", "1s"}, provider(i)...)
		url, cmd, _ := serve(t, bin, nil, args...)
		nodes = append(nodes, &clusterNode{url: url, cmd: cmd})
	}
	// Ready: every node sees every member and has heard its load (placement
	// weighs only members whose load it has). The deadline is for a hang.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		ready := 0
		for _, nd := range nodes {
			m, err := scrape(nd.url, "troupe:cluster_members")
			r, rerr := scrape(nd.url, "troupe:cluster_members_reporting")
			if err == nil && rerr == nil && int(m) == n && int(r) == n {
				ready++
			}
		}
		if ready == n {
			return nodes
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d nodes see the whole cluster", ready, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scrape reads one sample of a node's /metrics.
func scrape(url, name string) (float64, error) { return promtest.Sample(http.DefaultClient, url, name) }

// TestClusterServe runs etcd and three troupe nodes as processes, sends a
// mixed load (streaming and not, prompts sharing prefixes) through all
// three, and kills one node (SIGKILL) mid-load. Every request sent to the
// two that live completes, with exactly the text one node alone gives (so
// no token is lost or repeated across the failover); a request sent to
// the killed node either completed before it died or fails at the
// connection, never hangs.
func TestClusterServe(t *testing.T) {
	etcd := startEtcd(t)
	bin := buildTroupe(t)
	alone, _, _ := serve(t, bin, nil, "-m", testmodels.Path(t, "stories260K.gguf"))
	nodes := startCluster(t, bin, etcd, 3)

	bodies := clusterServeBodies()
	want := sequentially(t, alone, bodies)

	type result struct {
		node, body int
		stream     bool
		got        *choices
		err        error
	}
	results := make(chan result, 3*len(bodies))
	var wg sync.WaitGroup
	for nd := range nodes {
		for i, b := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang, not a slow machine
				defer cancel()
				cl := &soakClient{url: nodes[nd].url, http: &http.Client{}}
				stream := (i+nd)%2 == 0
				got, err := cl.do(ctx, b, stream)
				results <- result{nd, i, stream, got, err}
			}()
		}
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	victim, remote := waitRequestOn(t, nodes, 2, finished) // placement decides which node runs requests; n is at most 2
	if err := nodes[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-finished
	close(results)
	served, cut := 0, 0
	for r := range results {
		switch {
		case r.err != nil && r.node == victim:
			cut++ // its client was connected to the node that died
		case r.err != nil:
			t.Errorf("node %d, request %d (stream %v): %v", r.node, r.body, r.stream, r.err)
		case !equalChoices(r.got, want[r.body]):
			t.Errorf("node %d, request %d (stream %v): %q, alone %q", r.node, r.body, r.stream, r.got.text, want[r.body].text)
		default:
			served++
		}
	}
	var survivors []*clusterNode
	for i, nd := range nodes {
		if i != victim {
			survivors = append(survivors, nd)
		}
	}
	failovers := 0.0
	for _, nd := range survivors {
		v, err := scrape(nd.url, "troupe:cluster_failovers_total")
		if err != nil {
			t.Fatal(err)
		}
		failovers += v
	}
	t.Logf("%d served as one node serves them, %d cut off with the killed node %d (remote requests seen on it: %v); %v failovers", served, cut, victim, remote, failovers)
	if failovers == 0 && remote {
		t.Error("a request placed by another node was running on the killed node, and none failed over")
	}
	for _, nd := range survivors { // etcd's lease (3 s) ends the dead node's membership
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			v, err := scrape(nd.url, "troupe:cluster_members")
			if err == nil && v == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s sees %v members (%v); want 2", nd.url, v, err)
				break
			}
		}
	}
}

// sequentially sends each request to url in turn, none streamed, and
// returns each one's choices.
func sequentially(t *testing.T, url string, reqs []soakRequest) []*choices {
	t.Helper()
	c := &soakClient{url: url, http: &http.Client{}}
	out := make([]*choices, len(reqs))
	for i, r := range reqs {
		var err error
		if out[i], err = c.do(context.Background(), r, false); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	return out
}

// clusterServeBodies is TestClusterServe's load: completions of 300
// tokens, half of them on prompts sharing a long prefix, half with n=2.
func clusterServeBodies() []soakRequest {
	prefix := strings.Repeat("Lily and Tom went to the park to play with a big red ball. ", 6)
	var bodies []soakRequest
	for i := range 12 {
		p := fmt.Sprintf("Once upon a time %d", i)
		if i%2 == 0 {
			p = prefix + fmt.Sprintf("Then %d birds sang.", i)
		}
		bodies = append(bodies, soakRequest{"/v1/completions", map[string]any{"prompt": p, "max_tokens": 300, "temperature": 0, "ignore_eos": true, "n": 1 + i%2}})
	}
	return bodies
}

// waitRequestOn waits until one of nodes runs a request another node
// placed there (it has more sequences running or waiting than the
// requests it ever placed on itself can have, at most maxN each), and
// returns its index and remote true (polled, not a fixed sleep, which a
// loaded machine can outlast before any request gets there). Any node
// will do: which nodes run requests is placement's choice (prefix
// affinity over the members' hash ring, and load), so waiting on one
// given node could outlast the whole load. Should the load end
// (finished) before one is seen, it returns the first node seen with a
// request at all, and remote false: no failover is then owed (a slow
// node may run only its own clients' requests while others are there).
func waitRequestOn(t *testing.T, nodes []*clusterNode, maxN int, finished <-chan struct{}) (victim int, remote bool) {
	t.Helper()
	first := -1
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		for i, nd := range nodes {
			running, err1 := scrape(nd.url, "troupe:num_requests_running")
			waiting, err2 := scrape(nd.url, "troupe:num_requests_waiting")
			local, err3 := scrape(nd.url, `troupe:cluster_placements_total{model_name="stories260K",where="local"}`)
			if err1 != nil || err2 != nil || running+waiting == 0 {
				continue
			}
			if err3 == nil && running+waiting > float64(maxN)*local {
				return i, true
			}
			if first < 0 {
				first = i
			}
		}
		select {
		case <-finished:
			return max(first, 0), false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no request on any node after 5 minutes")
		}
	}
}

func equalChoices(a, b *choices) bool {
	return strings.Join(a.text, "\x00") == strings.Join(b.text, "\x00") && strings.Join(a.finish, ",") == strings.Join(b.finish, ",")
}

// TestClusterAffinity: requests that share a long prefix, sent to any of
// three nodes, all run on one node, whose prefix cache then serves the
// prefix (its hit counter grows; the others' do not).
func TestClusterAffinity(t *testing.T) {
	etcd := startEtcd(t)
	nodes := startCluster(t, buildTroupe(t), etcd, 3)
	hits := func() []float64 {
		var out []float64
		for _, nd := range nodes {
			v, err := scrape(nd.url, "troupe:prefix_cache_hits_total")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	before := hits()
	prefix := strings.Repeat("The little bird sat on the old tree and sang a happy song. ", 8) // ~120 tokens
	c := &soakClient{http: &http.Client{}}
	const sends = 9
	for i := range sends {
		c.url = nodes[i%len(nodes)].url
		b := soakRequest{"/v1/completions", map[string]any{"prompt": prefix + fmt.Sprintf("Then came %d cats.", i), "max_tokens": 8, "temperature": 0}}
		if _, err := c.do(context.Background(), b, false); err != nil {
			t.Fatal(err)
		}
	}
	after := hits()
	var grew []int
	for i := range nodes {
		if after[i] > before[i] {
			grew = append(grew, i)
		}
	}
	t.Logf("prefix cache hits by node: before %v, after %v", before, after)
	if len(grew) != 1 || after[grew[0]]-before[grew[0]] < float64(sends-1)*96 {
		t.Errorf("hits grew on nodes %v (before %v, after %v); want one node, by at least %d tokens", grew, before, after, (sends-1)*96)
	}
}

// TestClusterAutomanaged: two nodes form a cluster with nothing external
// (the automanaged provider) and serve each other's requests.
func TestClusterAutomanaged(t *testing.T) {
	ports := freeport.Ports(t, 4) // the automanaged ports, then the advertised ones: one call, so none repeats
	seeds := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
	nodes := startClusterWith(t, buildTroupe(t), ports[2:], func(i int) []string {
		return []string{"--provider", "automanaged", "--automanaged-port", strconv.Itoa(ports[i]), "--seeds", seeds}
	})
	// Until the nodes have told each other their load, placement may keep
	// requests at home: send until one runs on the other node (8 at least,
	// for as long as a loaded machine needs).
	c := &soakClient{url: nodes[0].url, http: &http.Client{}}
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; ; i++ {
		b := soakRequest{"/v1/completions", map[string]any{"prompt": fmt.Sprintf("%d little ducks", i), "max_tokens": 16}}
		if _, err := c.do(context.Background(), b, i%2 == 0); err != nil {
			t.Fatal(err)
		}
		remote, err := scrape(nodes[0].url, `troupe:cluster_placements_total{model_name="stories260K",where="remote"}`)
		if err != nil {
			t.Fatal(err)
		}
		if i >= 7 && remote > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request ran on the other node in %d requests", i+1)
		}
	}
}
