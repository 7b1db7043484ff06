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
