package backend

import (
	"fmt"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/compute/cuda"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// For returns an actors.Config.NewBackend that makes each device's backend
// for m on kind, as Resolve turns it into DeviceCPU or DeviceCUDA (device i
// then on GPU i modulo the GPU count). A kind Resolve rejects fails Start.
func For(m *model.Model, kind string) func(device int, c actors.BackendConfig) (actors.Backend, error) {
	return func(device int, c actors.BackendConfig) (actors.Backend, error) {
		resolved, err := Resolve(kind)
		if err != nil {
			return nil, err
		}
		if resolved == DeviceCPU {
			return NewCPUWithCache(m, c.KVCacheType, c.NumBlocks, c.BlockSize, c.NumHostBlocks, c.Workers)
		}
		if c.KVCacheType != kv.F16 {
			return nil, fmt.Errorf("backend: the CUDA device stores its KV cache as f16 only, not %s", c.KVCacheType)
		}
		n, err := cuda.DeviceCount()
		if err != nil {
			return nil, fmt.Errorf("backend: %w", err)
		}
		return NewCUDA(m, device%n, c.NumBlocks, c.BlockSize, c.NumHostBlocks)
	}
}
