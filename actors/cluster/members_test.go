package cluster_test

import (
	"slices"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors/cluster"
)

// TestMembers checks Node.Members: every node lists both members, in
// address order, itself marked once, the same list on each node.
func TestMembers(t *testing.T) {
	m := stories(t)
	nodes := startNodes(t, m, 2)
	addr := func(ms []cluster.Member) []string {
		var a []string
		for _, x := range ms {
			a = append(a, x.Address)
		}
		return a
	}
	var first []string
	for i, tn := range nodes {
		ms := tn.node.Members()
		for deadline := time.Now().Add(clusterWait); len(ms) < 2 && time.Now().Before(deadline); ms = tn.node.Members() {
			time.Sleep(20 * time.Millisecond)
		}
		if len(ms) != 2 {
			t.Fatalf("node %d lists %d members: %+v", i, len(ms), ms)
		}
		self := 0
		for _, x := range ms {
			if x.Self {
				self++
			}
			if x.Running != 0 || x.Waiting != 0 || x.KVCacheUsage != 0 {
				t.Errorf("node %d: idle member %+v shows load", i, x)
			}
		}
		if self != 1 {
			t.Errorf("node %d: %d members marked as itself: %+v", i, self, ms)
		}
		if a := addr(ms); !slices.IsSorted(a) {
			t.Errorf("node %d: members not in address order: %v", i, a)
		} else if first == nil {
			first = a
		} else if !slices.Equal(a, first) {
			t.Errorf("node %d lists %v, node 0 %v", i, a, first)
		}
	}
}
