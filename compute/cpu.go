package compute

import (
	"os"

	"golang.org/x/sys/cpu"
)

// ISA is an instruction set level a kernel family is written for.
type ISA int

const (
	// Generic is portable Go: the reference kernels.
	Generic ISA = iota
	// AVX2 is AVX2 with FMA and F16C (x86-64-v3).
	AVX2
	// AVX512VNNI adds AVX-512 F/BW/VL and VNNI's VPDPBUSD to AVX2. The
	// matrix kernels still use 256-bit vectors, the grouped attention
	// kernels 512-bit ones (their results equal the AVX2 kernels' bit for
	// bit); VNNI replaces three instructions per int8 dot step with one,
	// and EVEX gives sixteen more registers.
	AVX512VNNI
)

func (i ISA) String() string {
	switch i {
	case AVX2:
		return "avx2"
	case AVX512VNNI:
		return "avx512vnni"
	}
	return "generic"
}

// hostISA is the best level this CPU runs, lowered by TROUPE_CPU=generic or
// TROUPE_CPU=avx2 (for comparisons and tests); set once at start-up.
var hostISA = detectISA(os.Getenv("TROUPE_CPU"))

func detectISA(override string) ISA {
	best := Generic
	x := cpu.X86
	if hasAsm && x.HasAVX2 && x.HasFMA && x.HasOSXSAVE {
		best = AVX2
		if x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VNNI {
			best = AVX512VNNI
		}
	}
	switch override {
	case "generic":
		return Generic
	case "avx2":
		return min(best, AVX2)
	}
	return best
}

// hostBF16 reports whether this CPU has AVX512_BF16's VDPBF16PS, which the
// BF16 weight kernels use at the AVX512VNNI level (see kern_f.go).
var hostBF16 = cpu.X86.HasAVX512BF16

// HostISA reports the instruction set level the kernels use on this machine.
func HostISA() ISA { return hostISA }
