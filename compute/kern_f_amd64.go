package compute

// The float weight kernels of kern_f_amd64.s (see kern_f.go).

//go:generate sh -c "cd .. && python3 scripts/gen-kern-f.py > compute/kern_f_amd64.s"

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

// floatKernels512 holds the AVX512 kernels: F32, F16 (against activations
// kept as f16: the same arithmetic as against their float32 values, with
// half the bytes; 5-9% faster at m = 512, BenchmarkMatMulFloat), BF16, BF16
// by VDPBF16PS.
var floatKernels512 = [...]*floatKernel{
	{step: 16, dp: false, rnMax: 6, rm: [floatRN + 1]int{0, 1, 4, 4, 4, 4, 4},
		main: [floatRN + 1]floatFunc{nil, f32x1r1AVX512, f32x4r2AVX512, f32x4r3AVX512, f32x4r4AVX512, f32x4r5AVX512, f32x4r6AVX512},
		one:  [floatRN + 1]floatFunc{nil, f32x1r1AVX512, f32x1r2AVX512, f32x1r3AVX512, f32x1r4AVX512, f32x1r5AVX512, f32x1r6AVX512}},
	{step: 16, dp: false, xh: true, rnMax: 6, rm: [floatRN + 1]int{0, 1, 4, 4, 4, 4, 4},
		main: [floatRN + 1]floatFunc{nil, f16hx1r1AVX512, f16hx4r2AVX512, f16hx4r3AVX512, f16hx4r4AVX512, f16hx4r5AVX512, f16hx4r6AVX512},
		one:  [floatRN + 1]floatFunc{nil, f16hx1r1AVX512, f16hx1r2AVX512, f16hx1r3AVX512, f16hx1r4AVX512, f16hx1r5AVX512, f16hx1r6AVX512}},
	{step: 32, dp: false, rnMax: 6, rm: [floatRN + 1]int{0, 1, 4, 4, 4, 4, 4},
		main: [floatRN + 1]floatFunc{nil, bf16x1r1AVX512, bf16x4r2AVX512, bf16x4r3AVX512, bf16x4r4AVX512, bf16x4r5AVX512, bf16x4r6AVX512},
		one:  [floatRN + 1]floatFunc{nil, bf16x1r1AVX512, bf16x1r2AVX512, bf16x1r3AVX512, bf16x1r4AVX512, bf16x1r5AVX512, bf16x1r6AVX512}},
	{step: 32, dp: true, rnMax: 6, rm: [floatRN + 1]int{0, 1, 4, 4, 4, 4, 4},
		main: [floatRN + 1]floatFunc{nil, bf16dpx1r1AVX512, bf16dpx4r2AVX512, bf16dpx4r3AVX512, bf16dpx4r4AVX512, bf16dpx4r5AVX512, bf16dpx4r6AVX512},
		one:  [floatRN + 1]floatFunc{nil, bf16dpx1r1AVX512, bf16dpx1r2AVX512, bf16dpx1r3AVX512, bf16dpx1r4AVX512, bf16dpx1r5AVX512, bf16dpx1r6AVX512}},
}

// floatKernels256 holds the AVX2 kernels: F32, F16, BF16.
var floatKernels256 = [...]*floatKernel{
	{step: 16, dp: false, rnMax: 3, rm: [floatRN + 1]int{0, 1, 2, 2},
		main: [floatRN + 1]floatFunc{nil, f32x1r1AVX2, f32x2r2AVX2, f32x2r3AVX2},
		one:  [floatRN + 1]floatFunc{nil, f32x1r1AVX2, f32x1r2AVX2, f32x1r3AVX2}},
	{step: 16, dp: false, rnMax: 3, rm: [floatRN + 1]int{0, 1, 2, 2},
		main: [floatRN + 1]floatFunc{nil, f16x1r1AVX2, f16x2r2AVX2, f16x2r3AVX2},
		one:  [floatRN + 1]floatFunc{nil, f16x1r1AVX2, f16x1r2AVX2, f16x1r3AVX2}},
	{step: 32, dp: false, rnMax: 3, rm: [floatRN + 1]int{0, 1, 2, 2},
		main: [floatRN + 1]floatFunc{nil, bf16x1r1AVX2, bf16x2r2AVX2, bf16x2r3AVX2},
		one:  [floatRN + 1]floatFunc{nil, bf16x1r1AVX2, bf16x1r2AVX2, bf16x1r3AVX2}},
}

//go:noescape
func f32x1r1AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x4r2AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x1r2AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x4r3AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x1r3AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x4r4AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x1r4AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x4r5AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x1r5AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x1r1AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x4r2AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x1r2AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x4r3AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x1r3AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x4r4AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x1r4AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x4r5AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x1r5AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx1r1AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx4r2AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx1r2AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx4r3AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx1r3AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx4r4AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx1r4AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx4r5AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx1r5AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx1r1AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx4r2AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx1r2AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx4r3AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx1r3AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx4r4AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx1r4AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx4r5AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx1r5AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x4r6AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x1r6AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x4r6AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x1r6AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx4r6AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16dpx1r6AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx4r6AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16hx1r6AVX512(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x1r1AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x2r2AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x1r2AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x2r3AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f32x1r3AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16x1r1AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16x2r2AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16x1r2AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16x2r3AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func f16x1r3AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x1r1AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x2r2AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x1r2AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x2r3AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func bf16x1r3AVX2(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

//go:noescape
func roundF16AVX2(x, dst *float32, n int)

//go:noescape
func toF16AVX2(x *float32, dst *uint16, n int)

//go:noescape
func toBF16AVX512(x *float32, dst *uint16, n int)

// roundF16 rounds x to f16 values into dst (FP32ToFP16 and back; a NaN may
// keep other payload bits).
func roundF16(x, dst []float32) {
	n := 0
	if hostISA >= AVX2 {
		n = len(x) &^ 7
		if n > 0 {
			roundF16AVX2(&x[0], &dst[0], n)
		}
	}
	roundRowF16(x[n:], dst[n:])
}

// toF16 converts x to f16 into dst, as FP32ToFP16 (a NaN may keep other
// payload bits).
func toF16(x []float32, dst []uint16) {
	n := 0
	if hostISA >= AVX2 {
		n = len(x) &^ 7
		if n > 0 {
			toF16AVX2(&x[0], &dst[0], n)
		}
	}
	for i := n; i < len(x); i++ {
		dst[i] = FP32ToFP16(x[i])
	}
}

// toBF16 converts x to bf16 into dst, as FP32ToBF16.
func toBF16(x []float32, dst []uint16) {
	n := 0
	if hostISA >= AVX512VNNI {
		n = len(x) &^ 15
		if n > 0 {
			toBF16AVX512(&x[0], &dst[0], n)
		}
	}
	for i := n; i < len(x); i++ {
		dst[i] = FP32ToBF16(x[i])
	}
}

//go:noescape
func bf16SplitAVX2(x, dst *float32, n int)

// bf16Split is bf16SplitRef, by AVX2 for whole steps of 32.
func bf16Split(x, dst []float32) {
	n := 0
	if hostISA >= AVX2 {
		n = len(x) &^ 31
		if n > 0 {
			bf16SplitAVX2(&x[0], &dst[0], n)
		}
	}
	bf16SplitRef(x[n:], dst[n:])
}
