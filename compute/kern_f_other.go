//go:build !amd64 && !arm64

package compute

// floatKernelFor returns nil: this build has no assembly kernels.
func floatKernelFor(DType, ISA) *floatKernel { return nil }

// roundF16 rounds x to f16 values into dst.
func roundF16(x, dst []float32) { roundRowF16(x, dst) }

// toBF16 converts x to bf16 into dst.
func toBF16(x []float32, dst []uint16) {
	for i, v := range x {
		dst[i] = FP32ToBF16(v)
	}
}

// bf16Split is bf16SplitRef.
func bf16Split(x, dst []float32) { bf16SplitRef(x, dst) }

// toF16 converts x to f16 into dst.
func toF16(x []float32, dst []uint16) {
	for i, v := range x {
		dst[i] = FP32ToFP16(v)
	}
}
