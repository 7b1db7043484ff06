package cluster

import (
	"slices"
	"strings"
)

// Member is one member of the cluster as this node sees it: its address
// and the load it last gossiped (zero until it has).
type Member struct {
	Address      string
	Self         bool // this node
	Running      int
	Waiting      int
	KVCacheUsage float64
}

// Members returns the cluster's members from the latest topology, in
// address order, refused members left out.
func (n *Node) Members() []Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	ms := make([]Member, 0, len(n.members))
	for _, a := range n.members {
		if _, refused := n.refused[a]; refused {
			continue
		}
		l := n.loads[a]
		ms = append(ms, Member{Address: a, Self: a == n.self, Running: l.Running, Waiting: l.Waiting, KVCacheUsage: l.KVUsage})
	}
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.Address, b.Address) })
	return ms
}
