//go:build !amd64

package compute

// panelKernelFor returns nil: this build has no assembly kernels.
func panelKernelFor(DType, ISA) *panelKernel { return nil }
