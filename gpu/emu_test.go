package gpu

import (
	"testing"

	"github.com/troupe-llm/troupe/internal/cudaemu"
)

// Where there is no GPU the GPU tests run on the CUDA emulator
// (testdata/emu, set up by internal/cudaemu): the kernels built for the CPU
// with each CUDA thread a fiber. It checks the forward pass's logic and
// arithmetic, not its speed. TROUPE_CUDA_EMU=1 forces it, =0 turns it off.
func TestMain(m *testing.M) { cudaemu.Main(m) }
