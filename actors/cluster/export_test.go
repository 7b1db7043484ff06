package cluster

import "time"

// Kill ends the node as a crash would: its connections drop, nothing is
// said to the other nodes, and the requests it ran for them are lost.
func (n *Node) Kill() {
	close(n.stop)
	n.wg.Wait()
	n.c.Remote.Shutdown(false)
	n.system.Shutdown()
}

// SetGrainIdle sets how long worker grains wait before they stop.
func SetGrainIdle(d time.Duration) (restore func()) {
	old := grainIdle
	grainIdle = d
	return func() { grainIdle = old }
}

// MaxWaiting is the most requests waiting on one member, as this node last
// read the gossiped loads.
func (n *Node) MaxWaiting() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := 0
	for _, l := range n.loads {
		w = max(w, l.Waiting)
	}
	return w
}

// CutEveryStep makes p cut steps into micro-batches of one row and more
// (not minMicroRows), so that tests cut nearly every step; CutAsServed
// undoes it.
func (p *Pipeline) CutEveryStep() { p.minRows.Store(1) }
func (p *Pipeline) CutAsServed()  { p.minRows.Store(minMicroRows) }
