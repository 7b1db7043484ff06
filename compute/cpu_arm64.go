package compute

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

// hasAsm reports whether this build has the assembly kernels.
const hasAsm = true

// baseISA is this architecture's lowest SIMD level.
const baseISA = NEON

// detectISA returns the best arm64 level this CPU runs: Advanced SIMD is
// mandatory on arm64; SDOT and SMMLA as golang.org/x/sys/cpu reports them
// (from HWCAP on linux, from sysctl hw.optional.arm.FEAT_* on darwin).
func detectISA() ISA {
	return arm64ISA(cpu.ARM64.HasASIMDDP, cpu.ARM64.HasI8MM, runtime.GOOS)
}

// arm64ISA is detectISA's choice from the reported features. Every Apple
// arm64 CPU (M1 on) has dotprod, which older macOS releases do not report
// through sysctl; i8mm (M2 on) is taken only where reported.
func arm64ISA(dotprod, i8mm bool, goos string) ISA {
	if goos == "darwin" || goos == "ios" {
		dotprod = true
	}
	switch {
	case dotprod && i8mm:
		return I8MM
	case dotprod:
		return DotProd
	}
	return NEON
}

// hostBF16 is false: the BF16 dot-product kernels (VDPBF16PS) are amd64's;
// arm64's BF16 kernels use FMLA, the dotFloat arithmetic.
var hostBF16 = false
