package cluster

// Kill ends the node as a crash would: its connections drop, nothing is
// said to the other nodes, and the requests it ran for them are lost.
func (n *Node) Kill() {
	close(n.stop)
	n.wg.Wait()
	n.c.Remote.Shutdown(false)
	n.system.Shutdown()
}
