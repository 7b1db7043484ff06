package compute

// The float weight kernels of kern_f_arm64.s (see kern_f.go), declared in
// kernels_arm64.go.

// floatKernelFor returns the kernels for float weight type t on isa, or nil
// (the Go reference). Every arm64 level runs the NEON kernels: dotprod and
// i8mm are integer instructions.
func floatKernelFor(t DType, isa ISA) *floatKernel {
	if isa < NEON {
		return nil
	}
	switch t {
	case F16:
		return floatKernelsNEON[1]
	case BF16:
		return floatKernelsNEON[2]
	}
	return floatKernelsNEON[0]
}

// floatKernelsNEON holds the NEON kernels: F32, F16, BF16. Each output takes
// four V registers, so a call has at most 24 accumulators: four weight rows
// against one activation row, three against two, two against three.
var floatKernelsNEON = [...]*floatKernel{
	{step: 16, rnMax: 3, rm: [floatRN + 1]int{0, 4, 3, 2},
		main: [floatRN + 1]floatFunc{nil, f32x4r1NEON, f32x3r2NEON, f32x2r3NEON},
		one:  [floatRN + 1]floatFunc{nil, f32x1r1NEON, f32x1r2NEON, f32x1r3NEON}},
	{step: 16, rnMax: 3, rm: [floatRN + 1]int{0, 4, 3, 2},
		main: [floatRN + 1]floatFunc{nil, f16x4r1NEON, f16x3r2NEON, f16x2r3NEON},
		one:  [floatRN + 1]floatFunc{nil, f16x1r1NEON, f16x1r2NEON, f16x1r3NEON}},
	{step: 32, rnMax: 3, rm: [floatRN + 1]int{0, 4, 3, 2},
		main: [floatRN + 1]floatFunc{nil, bf16x4r1NEON, bf16x3r2NEON, bf16x2r3NEON},
		one:  [floatRN + 1]floatFunc{nil, bf16x1r1NEON, bf16x1r2NEON, bf16x1r3NEON}},
}

// roundF16 rounds x to f16 values into dst (FP32ToFP16 and back; a NaN may
// keep other payload bits), eight at a time by NEON.
func roundF16(x, dst []float32) { RoundF16s(dst[:len(x)], x) }

// toF16 converts x to f16 into dst, as FP32ToFP16 (a NaN may keep other
// payload bits), eight at a time by NEON.
func toF16(x []float32, dst []uint16) { F16s(dst[:len(x)], x) }

// toBF16 converts x to bf16 into dst.
func toBF16(x []float32, dst []uint16) {
	for i, v := range x {
		dst[i] = FP32ToBF16(v)
	}
}

// bf16Split is bf16SplitRef.
func bf16Split(x, dst []float32) { bf16SplitRef(x, dst) }
