package compute

// The float weight kernels of kern_f_amd64.s (see kern_f.go); their
// declarations and tables are in kernels_amd64.go.

// floatKernelFor returns the kernels for float weight type t on isa, or nil
// (the Go reference). dp selects VDPBF16PS for BF16 where the CPU has it.
func floatKernelFor(t DType, isa ISA) *floatKernel {
	switch {
	case isa >= AVX512VNNI && t == BF16 && hostBF16:
		return floatKernels512[3]
	case isa >= AVX512VNNI:
		return floatKernels512[floatIndex(t)]
	case isa >= AVX2:
		return floatKernels256[floatIndex(t)]
	}
	return nil
}

// floatIndex is t's place in the kernel tables.
func floatIndex(t DType) int {
	switch t {
	case F16:
		return 1
	case BF16:
		return 2
	}
	return 0
}

// roundF16 rounds x to f16 values into dst (FP32ToFP16 and back; a NaN may
// keep other payload bits).
func roundF16(x, dst []float32) {
	n := asmHead(AVX2, 8, len(x), func(n int) { roundF16AVX2(&x[0], &dst[0], n) })
	roundRowF16(x[n:], dst[n:])
}

// toF16 converts x to f16 into dst, as FP32ToFP16 (a NaN may keep other
// payload bits).
func toF16(x []float32, dst []uint16) {
	n := asmHead(AVX2, 8, len(x), func(n int) { toF16AVX2(&x[0], &dst[0], n) })
	for i := n; i < len(x); i++ {
		dst[i] = FP32ToFP16(x[i])
	}
}

// toBF16 converts x to bf16 into dst, as FP32ToBF16.
func toBF16(x []float32, dst []uint16) {
	n := asmHead(AVX512VNNI, 16, len(x), func(n int) { toBF16AVX512(&x[0], &dst[0], n) })
	for i := n; i < len(x); i++ {
		dst[i] = FP32ToBF16(x[i])
	}
}

// bf16Split is bf16SplitRef, by AVX2 for whole steps of 32.
func bf16Split(x, dst []float32) {
	n := asmHead(AVX2, 32, len(x), func(n int) { bf16SplitAVX2(&x[0], &dst[0], n) })
	bf16SplitRef(x[n:], dst[n:])
}
