//go:build !amd64

package compute

// geluAsm does nothing: Gelu runs in Go.
func geluAsm(x []float32) int { return 0 }

// lookupAsm does nothing: HalfTable.Lookup runs in Go.
func lookupAsm(x []float32, t *HalfTable) int { return 0 }
