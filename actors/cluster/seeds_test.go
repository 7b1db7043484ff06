package cluster

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSeedMembers: a seed that does not answer stays a member for
// seedGrace after its last answer; one that is gone (refused, leaving)
// is out at once; another cluster's node is never one.
func TestSeedMembers(t *testing.T) {
	p := newSeedProvider(1, []string{"a:1", "b:1", "c:1"})
	p.self.ClusterName = "x"
	node := func(id, name string) seedAnswer {
		return seedAnswer{node: &seedNode{ID: id, Address: "127.0.0.1", Port: 9, ClusterName: name}}
	}
	ids := func(now time.Time, answers ...seedAnswer) []string {
		var got []string
		for _, m := range p.members(now, answers) {
			got = append(got, m.Id)
		}
		return got
	}
	t0 := time.Unix(1000, 0)
	check := func(got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("members %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("members %v, want %v", got, want)
			}
		}
	}
	check(ids(t0, node("A", "x"), node("B", "x"), node("C", "y")), "A", "B")
	// No answer from b: still a member within the grace, out after it.
	check(ids(t0.Add(seedGrace), node("A", "x"), seedAnswer{}, seedAnswer{}), "A", "B")
	check(ids(t0.Add(seedGrace+time.Second), node("A", "x"), seedAnswer{}, seedAnswer{}), "A")
	// b answers again (a new process: a new id); then a is gone at once.
	check(ids(t0.Add(20*time.Second), node("A", "x"), node("B2", "x"), seedAnswer{}), "A", "B2")
	check(ids(t0.Add(21*time.Second), seedAnswer{gone: true}, node("B2", "x"), seedAnswer{}), "B2")
}

// TestSeedAsk: an answer is a node, a 503 (leaving) or a refused
// connection is gone.
func TestSeedAsk(t *testing.T) {
	p := newSeedProvider(1, nil)
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"id":"A","address":"127.0.0.1","port":9,"cluster_name":"x"}`))
	}))
	defer ok.Close()
	leaving := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "leaving", http.StatusServiceUnavailable)
	}))
	defer leaving.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	if a := p.ask(host(ok)); a.node == nil || a.node.ID != "A" || a.node.Port != 9 {
		t.Errorf("answering seed: %+v", a)
	}
	if a := p.ask(host(leaving)); !a.gone {
		t.Errorf("leaving seed: %+v, want gone", a)
	}
	if a := p.ask(host(closed)); !a.gone {
		t.Errorf("closed port: %+v, want gone", a)
	}
}
