package actors_test

import (
	"testing"

	"github.com/troupe-llm/troupe/internal/cudaemu"
)

// emu is whether this test binary runs CUDA on the emulator (where there is
// no GPU: see internal/cudaemu), and why it could not when it should.
var emu struct {
	active bool
	err    error
}

func TestMain(m *testing.M) {
	// Before any test touches compute/cuda, which loads the driver once.
	emu.active, emu.err = cudaemu.Setup()
	m.Run()
}
