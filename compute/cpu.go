package compute

import "os"

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
	// NEON is arm64's Advanced SIMD, which every arm64 CPU has.
	NEON
	// DotProd adds ARMv8.2's SDOT/UDOT to NEON.
	DotProd
	// I8MM adds ARMv8.6's SMMLA/UMMLA to DotProd.
	I8MM

	numISA // the number of levels: isaKernels' length
)

// An architecture's levels are contiguous and ordered, each running what
// the one below runs: amd64's from AVX2 up, arm64's from NEON up. baseISA
// (cpu_$GOARCH.go) is the lowest of this architecture's.

func (i ISA) String() string {
	switch i {
	case AVX2:
		return "avx2"
	case AVX512VNNI:
		return "avx512vnni"
	case NEON:
		return "neon"
	case DotProd:
		return "dotprod"
	case I8MM:
		return "i8mm"
	}
	return "generic"
}

// hostISA is the best level this CPU runs, lowered by TROUPE_CPU (generic,
// or a lower level's name: avx2 on amd64; neon or dotprod on arm64) for
// comparisons and tests; set once at start-up.
var hostISA = lowerISA(detectISA(), os.Getenv("TROUPE_CPU"))

// lowerISA returns best lowered to the level override names, when it is
// one of this architecture's.
func lowerISA(best ISA, override string) ISA {
	if override == "generic" {
		return Generic
	}
	for l := baseISA; l < best && l > Generic; l++ {
		if l.String() == override {
			return l
		}
	}
	return best
}

// x86 reports whether i is one of amd64's SIMD levels.
func (i ISA) x86() bool { return i == AVX2 || i == AVX512VNNI }

// HostISA reports the instruction set level the kernels use on this machine.
func HostISA() ISA { return hostISA }

// asmHead runs an assembly kernel on the start of a slice of n values: the
// whole multiples of step (a power of two), where the CPU runs isa. It calls
// run with that count and returns it (0, not calling run, when there is none).
func asmHead(isa ISA, step, n int, run func(n int)) int {
	n &^= step - 1
	if hostISA < isa || n == 0 {
		return 0
	}
	run(n)
	return n
}
