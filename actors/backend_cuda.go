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
	DeviceAuto = "auto" // CUDA when a GPU is present, else the CPU
)

// ResolveDevice turns a Config.Device value into DeviceCPU or DeviceCUDA:
// "" is the CPU; "auto" is CUDA when the driver loads and reports a device;
// "cuda" without one is an error that says why.
func ResolveDevice(kind string) (string, error) {
	switch kind {
	case "", DeviceCPU:
		return DeviceCPU, nil
	case DeviceAuto:
		if cuda.Available() == nil {
			return DeviceCUDA, nil
		}
		return DeviceCPU, nil
	case DeviceCUDA:
		if err := cuda.Available(); err != nil {
			return "", err // says why: no driver, or no device
		}
		return DeviceCUDA, nil
	}
	return "", fmt.Errorf("actors: device %q: want cpu, cuda or auto", kind)
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
