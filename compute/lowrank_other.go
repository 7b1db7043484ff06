//go:build !amd64

package compute

// lowRankAsm does no panels: this build has no low-rank kernel (AddCols's Go
// arithmetic takes them all).
func lowRankAsm[E float32 | uint16](panel []E, t, out []float32, full int, scale float32) int {
	return 0
}
