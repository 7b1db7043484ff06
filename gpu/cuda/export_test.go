package cuda

import "testing"

// SetGPUHooks sets the hooks of hooks_test.go (from main_test.go).
func SetGPUHooks(require func(testing.TB), unavailable func(testing.TB, error), emulated func() bool) {
	gpuHooks.require, gpuHooks.unavailable, gpuHooks.emulated = require, unavailable, emulated
}
