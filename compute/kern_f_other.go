//go:build !amd64

package compute

// floatKernelFor returns nil: this build has no assembly kernels.
func floatKernelFor(DType, ISA) *floatKernel { return nil }
