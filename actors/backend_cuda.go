package actors

import (
	"errors"
	"fmt"

	"github.com/troupe-llm/troupe/compute/cuda"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/gpu"
)

// Device kinds for Config.Device.
const (
	DeviceCPU  = "cpu"
	DeviceCUDA = "cuda"
	DeviceAuto = "auto" // CUDA when the model loads on the GPU, else the CPU
)

// ResolveDevice checks a Config.Device value before anything is loaded:
// "" is DeviceCPU; "cuda" without a driver and a device is an error that
// says why; "auto" stays DeviceAuto, for Start to decide (see
// Config.Device).
func ResolveDevice(kind string) (string, error) {
	switch kind {
	case "", DeviceCPU:
		return DeviceCPU, nil
	case DeviceAuto:
		return DeviceAuto, nil
	case DeviceCUDA:
		if err := cuda.Available(); err != nil {
			return "", err // says why: no driver, or no device
		}
		return DeviceCUDA, nil
	}
	return "", fmt.Errorf("actors: device %q: want cpu, cuda or auto", kind)
}

// newBackends makes the cfg.Devices backends of cfg.Device, for Start, and
// says which kind they are. DeviceAuto is CUDA only when every stage
// succeeds: the driver and a device, NVRTC, and the model's load onto each
// GPU (allocation, compiling and loading the kernels); at the first
// failure it is the CPU, and fallback says why.
func newBackends(m *model.Model, cfg Config) (bes []Backend, kind string, fallback, err error) {
	kind, err = ResolveDevice(cfg.Device)
	if err != nil {
		return nil, "", nil, err
	}
	switch kind {
	case DeviceCUDA:
		bes, err = newCUDABackends(m, cfg)
		return bes, DeviceCUDA, nil, err
	case DeviceAuto:
		if bes, fallback = tryCUDA(m, cfg); fallback == nil {
			return bes, DeviceCUDA, nil, nil
		}
	}
	for range cfg.Devices {
		be, err := NewCPUBackend(m, cfg.NumBlocks, cfg.BlockSize, cfg.NumHostBlocks, cfg.Workers)
		if err != nil {
			return nil, "", nil, err
		}
		bes = append(bes, be)
	}
	return bes, DeviceCPU, fallback, nil
}

// tryCUDA makes CUDA backends, or says which stage failed.
func tryCUDA(m *model.Model, cfg Config) ([]Backend, error) {
	if err := cuda.Available(); err != nil {
		return nil, err
	}
	if _, _, err := cuda.NVRTCVersion(); err != nil {
		return nil, err
	}
	return newCUDABackends(m, cfg)
}

// CUDABackend runs the model on an NVIDIA GPU (model/gpu): weights and KV
// blocks in device memory, the host tier in pinned memory.
type CUDABackend struct {
	dev    *cuda.Device
	g      *gpu.Model
	copies []gpu.BlockCopy // reused by swaps
}

// NewCUDABackend loads m onto GPU ordinal with numBlocks KV blocks of
// blockSize tokens and numHostBlocks pinned host blocks.
func NewCUDABackend(m *model.Model, ordinal, numBlocks, blockSize, numHostBlocks int) (*CUDABackend, error) {
	dev, err := cuda.Open(ordinal)
	if err != nil {
		return nil, fmt.Errorf("actors: %w", err)
	}
	g, err := gpu.Load(m, dev, gpu.Config{NumBlocks: numBlocks, BlockSize: blockSize, NumHostBlocks: numHostBlocks})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("actors: %w", err), dev.Close())
	}
	return &CUDABackend{dev: dev, g: g}, nil
}

// newCUDABackends makes cfg.Devices CUDA backends, spread over the GPUs.
func newCUDABackends(m *model.Model, cfg Config) ([]Backend, error) {
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("actors: %w", err)
	}
	var out []Backend
	for i := range cfg.Devices {
		be, err := NewCUDABackend(m, i%n, cfg.NumBlocks, cfg.BlockSize, cfg.NumHostBlocks)
		if err != nil {
			return nil, errors.Join(err, closeBackends(out))
		}
		out = append(out, be)
	}
	return out, nil
}

func (b *CUDABackend) Forward(batch *model.Batch, logits []float32) error {
	return b.g.Forward(batch, logits)
}

func (b *CUDABackend) ForwardGreedy(batch *model.Batch, greedy []bool, logits []float32, ids []int32) error {
	return b.g.ForwardGreedy(batch, greedy, logits, ids)
}

func (b *CUDABackend) VocabSize() int     { return b.g.VocabSize() }
func (b *CUDABackend) NumBlocks() int     { return b.g.NumBlocks() }
func (b *CUDABackend) BlockSize() int     { return b.g.BlockSize() }
func (b *CUDABackend) NumHostBlocks() int { return b.g.NumHostBlocks() }

func (b *CUDABackend) SwapOut(copies []messages.BlockCopy) error {
	return b.g.SwapOut(b.convert(copies))
}
func (b *CUDABackend) SwapIn(copies []messages.BlockCopy) error { return b.g.SwapIn(b.convert(copies)) }

func (b *CUDABackend) convert(copies []messages.BlockCopy) []gpu.BlockCopy {
	b.copies = b.copies[:0]
	for _, c := range copies {
		b.copies = append(b.copies, gpu.BlockCopy{Src: c.Src, Dst: c.Dst})
	}
	return b.copies
}

// Close frees the device memory and releases the GPU.
func (b *CUDABackend) Close() error { return errors.Join(b.g.Close(), b.dev.Close()) }
