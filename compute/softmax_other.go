//go:build !amd64

package compute

// softMaxAsm reports false: SoftMax runs softMaxExp.
func softMaxAsm(x []float32, scale float32) bool { return false }
