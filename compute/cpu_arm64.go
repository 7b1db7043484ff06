package compute

import "golang.org/x/sys/cpu"

// hasAsm reports whether this build has the assembly kernels. False until
// the arm64 kernels land: every level's tables are empty, so detectISA's
// level only names the CPU.
const hasAsm = true

// baseISA is this architecture's lowest SIMD level.
const baseISA = NEON

func detectISA() ISA {
	if !hasAsm {
		return Generic
	}
	a := cpu.ARM64
	best := NEON // Advanced SIMD is mandatory on arm64
	if a.HasASIMDDP {
		best = DotProd
		if a.HasI8MM {
			best = I8MM
		}
	}
	return best
}

// hostBF16 is false: the BF16 dot-product kernels are amd64's.
var hostBF16 = false
