//go:build !amd64

package compute

// hasAsm reports whether this build has the assembly kernels.
const hasAsm = false
