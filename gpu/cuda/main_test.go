package cuda_test

import (
	"testing"

	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/internal/cudaemu"
)

// Where there is no GPU the tests that need one run on the CUDA emulator
// (internal/cudaemu; it has no cuBLAS, so those tests skip there). Under
// CI=true a test that can run on neither fails.
func TestMain(m *testing.M) {
	cuda.SetGPUHooks(cudaemu.Require, cudaemu.Unavailable, cudaemu.Active)
	cudaemu.Main(m)
}
