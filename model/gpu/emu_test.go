package gpu

import (
	"testing"

	"github.com/troupe-llm/troupe/internal/cudaemu"
)

// Where there is no GPU the GPU tests run on the CUDA emulator
// (testdata/emu, set up by internal/cudaemu): kernels.cu built for the CPU
// with each CUDA thread a fiber. It checks the forward pass's logic and
// arithmetic, not its speed. TROUPE_CUDA_EMU=1 forces it, =0 turns it off.

// emu is whether this test binary runs on the emulator, and why it could
// not when it should.
var emu struct {
	active bool
	err    error
}

func TestMain(m *testing.M) {
	// Before any test touches compute/cuda, which loads the driver once.
	emu.active, emu.err = cudaemu.Setup()
	m.Run()
}
