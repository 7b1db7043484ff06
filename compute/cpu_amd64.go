package compute

// hasAsm reports whether this build has the assembly kernels.
const hasAsm = true
