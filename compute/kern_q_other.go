//go:build !amd64 && !arm64

package compute

// This build has no assembly kernels: every type runs its Go dot product.
var (
	asmQ8_0 map[DType]*isaKernels[blockQ8_0]
	asmQ8_1 map[DType]*isaKernels[blockQ8_1]
	asmQ8_K map[DType]*isaKernels[blockQ8_K]
)
