//go:build !amd64

package compute

// q8_1KernelFor returns nil: this build has no assembly kernels.
func q8_1KernelFor(DType, ISA) *panelKernel[blockQ8_1] { return nil }
