package cuda

import (
	"os"
	"testing"
)

// The GPU tests of this package run on a device or on the CUDA emulator.
// internal/cudaemu decides which, and ends a test that can run on neither
// (a failure under CI=true, else a skip); it imports this package, so these
// in-package tests reach it through hooks that main_test.go (package
// cuda_test) sets before any test runs. Unset (a binary without that
// TestMain), they skip.
var gpuHooks = struct {
	require     func(testing.TB)        // cudaemu.Require
	unavailable func(testing.TB, error) // cudaemu.Unavailable
	emulated    func() bool             // cudaemu.Active
}{
	require: func(tb testing.TB) {
		if err := Available(); err != nil {
			tb.Skip("no CUDA device: " + err.Error())
		}
	},
	unavailable: func(tb testing.TB, err error) { tb.Skip(err) },
	emulated:    func() bool { return os.Getenv("TROUPE_CUDA_EMU") == "1" },
}
