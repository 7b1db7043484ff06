package actors_test

import (
	"testing"

	"github.com/troupe-llm/troupe/internal/cudaemu"
)

// Where there is no GPU, TestCUDA runs on the CUDA emulator (internal/cudaemu).
func TestMain(m *testing.M) { cudaemu.Main(m) }
