package compute

import "golang.org/x/sys/cpu"

// hasAsm reports whether this build has the assembly kernels.
const hasAsm = true

// baseISA is this architecture's lowest SIMD level.
const baseISA = AVX2

func detectISA() ISA {
	best := Generic
	x := cpu.X86
	if x.HasAVX2 && x.HasFMA && x.HasOSXSAVE {
		best = AVX2
		if x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VNNI {
			best = AVX512VNNI
		}
	}
	return best
}

// hostBF16 reports whether this CPU has AVX512_BF16's VDPBF16PS, which the
// BF16 weight kernels use at the AVX512VNNI level (see kern_f.go).
var hostBF16 = cpu.X86.HasAVX512BF16
