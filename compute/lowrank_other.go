//go:build !amd64

package compute

// lowRankAsm does no panels: this build has no low-rank kernel (AddCols's Go
// arithmetic takes them all).
func lowRankAsm(panel, t, out []float32, full int, scale float32) int { return 0 }

// lowRankF16Asm does no panels either.
func lowRankF16Asm(panel []uint16, t, out []float32, full int, scale float32) int { return 0 }
