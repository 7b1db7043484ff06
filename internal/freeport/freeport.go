// Package freeport finds free TCP ports for the tests that start cluster
// members (actors/cluster in process, cmd/troupe as processes).
package freeport

import (
	"net"
	"testing"
)

// Ports returns n distinct ports free on 127.0.0.1 just now. Ports from two
// calls may repeat (each call's listeners are closed when it returns): take
// every port a test needs in one call.
func Ports(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
