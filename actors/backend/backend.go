package backend

import (
	"fmt"
	"sync"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// Selector makes the backends of one device kind for a model; its New is
// an actors.Config.NewBackend. DeviceAuto is decided by the first device:
// CUDA only when the driver and a device, NVRTC, and the model's load onto
// the GPU (allocation, compiling and loading the kernels) all succeed;
// otherwise every device is the CPU and Fallback says why.
type Selector struct {
	m    *model.Model
	kind string

	mu       sync.Mutex
	decided  string // DeviceCPU or DeviceCUDA once the first backend is made
	fallback error
}

// NewSelector returns a Selector for m on kind (see Resolve).
func NewSelector(m *model.Model, kind string) *Selector { return &Selector{m: m, kind: kind} }

// For returns an actors.Config.NewBackend that makes each device's backend
// for m on kind (device i then on GPU i modulo the GPU count). A kind
// Resolve rejects fails Start.
func For(m *model.Model, kind string) func(device int, c actors.BackendConfig) (actors.Backend, error) {
	return NewSelector(m, kind).New
}

// New makes device's backend.
func (s *Selector) New(device int, c actors.BackendConfig) (actors.Backend, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decided == "" {
		kind, err := Resolve(s.kind)
		if err != nil {
			return nil, err
		}
		if kind == DeviceAuto {
			be, err := tryCUDA(s.m, device, c)
			if err == nil {
				s.decided = DeviceCUDA
				return be, nil
			}
			kind, s.fallback = DeviceCPU, err
		}
		s.decided = kind
	}
	if s.decided == DeviceCPU {
		return NewCPUWithCache(s.m, c.KVCacheType, c.NumBlocks, c.BlockSize, c.NumHostBlocks, c.Workers)
	}
	if c.KVCacheType != kv.F16 {
		return nil, fmt.Errorf("backend: the CUDA device stores its KV cache as f16 only, not %s (a %s cache runs on the CPU device)", c.KVCacheType, c.KVCacheType)
	}
	return newCUDA(s.m, device, c)
}

// Device is the kind of the backends made: DeviceCPU or DeviceCUDA ("" before
// the first).
func (s *Selector) Device() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decided
}

// Fallback says why DeviceAuto took the CPU (nil: it did not, or it was not
// asked).
func (s *Selector) Fallback() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fallback
}

// tryCUDA makes device's CUDA backend, or says which stage failed.
func tryCUDA(m *model.Model, device int, c actors.BackendConfig) (actors.Backend, error) {
	if c.KVCacheType != kv.F16 {
		return nil, fmt.Errorf("backend: a %s KV cache is CPU only", c.KVCacheType)
	}
	if err := cuda.Available(); err != nil {
		return nil, err
	}
	if _, _, err := cuda.NVRTCVersion(); err != nil {
		return nil, err
	}
	return newCUDA(m, device, c)
}

// newCUDA makes device's CUDA backend on GPU device modulo the GPU count.
func newCUDA(m *model.Model, device int, c actors.BackendConfig) (actors.Backend, error) {
	if m.Config.Encoder {
		return nil, fmt.Errorf("backend: %s (an encoder) runs on the CPU device only", m.Config.Arch)
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	return NewCUDA(m, device%n, c.NumBlocks, c.BlockSize, c.NumHostBlocks)
}
