//go:build !amd64

package compute

// panelKernelFor returns nil: this build has no assembly kernels.
func panelKernelFor(DType, ISA) *panelKernel[blockQ8_0] { return nil }

// kKernelFor returns nil: this build has no assembly kernels.
func kKernelFor(DType, ISA) *panelKernel[blockQ8_K] { return nil }

// q4_KRowsVNNI is nil: this build has no assembly kernels.
var q4_KRowsVNNI *panelKernel[blockQ8_K]
