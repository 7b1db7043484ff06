package cluster

// Placement policy, in plain Go: the Node gathers the inputs (the grain's
// owner from protoactor's rendezvous hashing, the gossiped loads, the
// members) and these functions decide. They are table-tested in
// place_test.go without a cluster.

// busy is what placement weighs of a node's load: its sequences, running
// and waiting.
func (l load) busy() int { return l.Running + l.Waiting }

// placement picks the node for a request whose prefix's grain lives on
// owner: owner, unless it has requests waiting and is busier than the least
// loaded node of loads, by overflow or more sequences or by a nearly full
// KV pool (90%, the least loaded's under half: it would preempt). Then the
// least loaded takes it, and overflowed is true. loads holds the gossiped
// loads of the members that may take requests; an owner whose load is not
// known keeps the request. Ties go to the smaller address, so the answer
// does not depend on map order.
func placement(owner string, loads map[string]load, overflow int) (addr string, overflowed bool) {
	own, ok := loads[owner]
	if !ok {
		return owner, false
	}
	least, leastAddr := own, owner
	for a, l := range loads {
		if a == owner {
			continue
		}
		if l.busy() < least.busy() || leastAddr != owner && l.busy() == least.busy() && a < leastAddr {
			least, leastAddr = l, a
		}
	}
	busier := own.busy() >= least.busy()+overflow || own.KVUsage >= 0.9 && least.KVUsage < 0.5
	if leastAddr == owner || own.Waiting == 0 || !busier {
		return owner, false
	}
	return leastAddr, true
}

// failoverTarget picks the node that reruns a request whose node was lost:
// the least loaded of members that is not in tried (ties: the smaller
// address). "": none is left. A member with no gossiped load counts as idle.
func failoverTarget(members []string, loads map[string]load, tried map[string]bool) string {
	best, bestBusy := "", 0
	for _, a := range members {
		if tried[a] {
			continue
		}
		b := loads[a].busy()
		if best == "" || b < bestBusy || b == bestBusy && a < best {
			best, bestBusy = a, b
		}
	}
	return best
}
