package cuda_test

import (
	"testing"

	"github.com/troupe-llm/troupe/internal/cudaemu"
)

// Where there is no GPU the tests that need one run on the CUDA emulator
// (internal/cudaemu; it has no cuBLAS, so those tests skip there).
func TestMain(m *testing.M) { cudaemu.Main(m) }
