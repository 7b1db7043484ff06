package backend

import (
	"errors"
	"fmt"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/gpu"
	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// Device kinds, for For and Resolve.
const (
	DeviceCPU  = "cpu"
	DeviceCUDA = "cuda"
	DeviceAuto = "auto" // CUDA when the model loads on the GPU, else the CPU
)

// Resolve checks a device kind before anything is loaded: "" is DeviceCPU;
// "cuda" without a driver and a device is an error that says why; "auto"
// stays DeviceAuto, for Selector.New to decide.
func Resolve(kind string) (string, error) {
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
	return "", fmt.Errorf("backend: device %q: want cpu, cuda or auto", kind)
}

var _ actors.GreedyBackend = (*CUDA)(nil)

// CUDA runs the model on an NVIDIA GPU (package gpu): weights and KV
// blocks in device memory, the host tier in pinned memory.
type CUDA struct {
	dev    *cuda.Device
	g      *gpu.Model
	copies []gpu.BlockCopy // reused by swaps
}

// NewCUDA loads m onto GPU ordinal with numBlocks KV blocks of
// blockSize tokens and numHostBlocks pinned host blocks.
func NewCUDA(m *model.Model, ordinal, numBlocks, blockSize, numHostBlocks int) (*CUDA, error) {
	dev, err := cuda.Open(ordinal)
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	g, err := gpu.Load(m, dev, gpu.Config{NumBlocks: numBlocks, BlockSize: blockSize, NumHostBlocks: numHostBlocks})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("backend: %w", err), dev.Close())
	}
	return &CUDA{dev: dev, g: g}, nil
}

// Forward runs the batch on the GPU; an image's rows (Batch.Embeds, encoded
// on the CPU) are copied over their placeholders' embeddings there.
func (b *CUDA) Forward(batch *model.Batch, logits []float32) error { return b.g.Forward(batch, logits) }

func (b *CUDA) ForwardGreedy(batch *model.Batch, greedy []bool, logits []float32, ids []int32) error {
	return b.g.ForwardGreedy(batch, greedy, logits, ids)
}

func (b *CUDA) VocabSize() int     { return b.g.VocabSize() }
func (b *CUDA) DeviceKind() string { return DeviceCUDA }
func (b *CUDA) NumBlocks() int     { return b.g.NumBlocks() }
func (b *CUDA) BlockSize() int     { return b.g.BlockSize() }
func (b *CUDA) NumHostBlocks() int { return b.g.NumHostBlocks() }

func (b *CUDA) SwapOut(copies []messages.BlockCopy) error {
	return b.g.SwapOut(b.convert(copies))
}
func (b *CUDA) SwapIn(copies []messages.BlockCopy) error { return b.g.SwapIn(b.convert(copies)) }

func (b *CUDA) convert(copies []messages.BlockCopy) []gpu.BlockCopy {
	b.copies = b.copies[:0]
	for _, c := range copies {
		b.copies = append(b.copies, gpu.BlockCopy{Src: c.Src, Dst: c.Dst})
	}
	return b.copies
}

// Close frees the device memory and releases the GPU.
func (b *CUDA) Close() error { return errors.Join(b.g.Close(), b.dev.Close()) }
