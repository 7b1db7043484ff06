//go:build !amd64 && !arm64

package compute

// This build has no assembly kernels, so none to read weights in place.
var (
	inPlaceQ8_0 map[DType]*isaKernels[blockQ8_0]
	inPlaceQ8_K map[DType]*isaKernels[blockQ8_K]
)
