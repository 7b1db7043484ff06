//go:build !amd64 && !arm64

package compute

// hasAsm reports whether this build has the assembly kernels.
const hasAsm = false

// baseISA is Generic: this architecture has no SIMD levels.
const baseISA = Generic

func detectISA() ISA { return Generic }

// hostBF16 is false: the BF16 dot-product kernels are amd64's.
var hostBF16 = false
