//go:build !amd64

package compute

// addVec does no values: Add runs its loop.
func addVec(dst, x []float32) int { return 0 }
