package cluster

import (
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// gossipOf is the gossip state of records, keyed by a member id each.
func gossipOf(t *testing.T, records ...stageRecord) map[string]*cluster.GossipKeyValue {
	t.Helper()
	state := map[string]*cluster.GossipKeyValue{}
	for _, r := range records {
		b, err := msgpack.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		v, err := anypb.New(wrapperspb.Bytes(b))
		if err != nil {
			t.Fatal(err)
		}
		state["id-"+r.Address] = &cluster.GossipKeyValue{Value: v}
	}
	state["garbage"] = &cluster.GossipKeyValue{} // no value: skipped
	return state
}

// TestPipelineMembersRead: a stage member finds the head of its stage
// count and model in the gossip of the topology's members, keeps it while
// it stays, falls back to a head of another model (which refuses it by
// name) only when there is none, and logs once a stage announced twice.
func TestPipelineMembersRead(t *testing.T) {
	id, other := identity{Model: "aa", Device: "cpu"}, identity{Model: "bb", Device: "cpu"}
	var logged []string
	pm := &pipelineMembers{self: stageRecord{Stage: 1, Stages: 3, Address: "h:2", ID: id}, records: map[string]stageRecord{}, noticed: map[string]bool{},
		log: func(s string) { logged = append(logged, s) }}
	head := stageRecord{Stage: 0, Stages: 3, Address: "h:1", ID: id}
	dup := stageRecord{Stage: 1, Stages: 3, Address: "h:4", ID: id}
	foreignHead := stageRecord{Stage: 0, Stages: 3, Address: "h:0", ID: other}
	wrongSplit := stageRecord{Stage: 0, Stages: 2, Address: "h:5", ID: id}

	pm.members = []string{"h:2"} // the head's gossip came before its membership: not yet
	pm.read(gossipOf(t, pm.self, head))
	if h := pm.Head(); h != "" {
		t.Errorf("a head not in the topology: %q", h)
	}
	pm.members = []string{"h:0", "h:1", "h:2", "h:4", "h:5"}
	for range 2 {
		pm.read(gossipOf(t, pm.self, head, dup, foreignHead, wrongSplit))
	}
	if h := pm.Head(); h != "h:1" {
		t.Errorf("the head: %q, want h:1 (stage 0 of 3, the same model)", h)
	}
	if got := pm.Stages(); got["h:4"] != 1 || got["h:1"] != 0 || len(got) != 5 {
		t.Errorf("the stages: %v", got)
	}
	all := strings.Join(logged, "\n")
	for _, want := range []string{"pipeline stage 1 is announced by h:2 and h:4", "h:0 serves model sha256:bb", "h:5 serves a pipeline of 2 stages"} {
		if !strings.Contains(all, want) {
			t.Errorf("logged %q, want a line with %q", all, want)
		}
	}
	if len(logged) != 3 {
		t.Errorf("logged %d lines, want each of 3 once:\n%s", len(logged), all)
	}
	pm.members = []string{"h:0", "h:2"} // the head left
	pm.read(gossipOf(t, pm.self, head, foreignHead))
	if h := pm.Head(); h != "h:0" {
		t.Errorf("with only a head of another model: %q, want h:0 (it refuses this member by name)", h)
	}
}
