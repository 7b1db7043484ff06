package backend

import (
	"fmt"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

var _ actors.WindowBackend = (*CPU)(nil)

// CPU runs a model.Model on the CPU over a kv.Cache, with a second,
// bounded kv.Cache as its host tier for swapped-out blocks.
type CPU struct {
	m     *model.Model
	state *model.State
	cache *kv.Cache // (num_blocks) device blocks
	host  *kv.Cache // (num_host_blocks) host tier; nil when 0
}

// NewCPU returns a CPU backend for m with numBlocks KV blocks of
// blockSize tokens, numHostBlocks host-tier blocks, and workers goroutines
// for the forward pass. Its KV cache stores f16.
func NewCPU(m *model.Model, numBlocks, blockSize, numHostBlocks, workers int) (*CPU, error) {
	return NewCPUWithCache(m, kv.F16, numBlocks, blockSize, numHostBlocks, workers)
}

// NewCPUWithCache is NewCPU with a KV cache of type t (the host tier's too).
func NewCPUWithCache(m *model.Model, t kv.CacheType, numBlocks, blockSize, numHostBlocks, workers int) (*CPU, error) {
	c := &m.Config
	if t == kv.Q8_0 && c.HeadDim%32 != 0 {
		return nil, fmt.Errorf("backend: a q8_0 KV cache needs a head size that is a multiple of 32 (the model's is %d)", c.HeadDim)
	}
	cfg := kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), BlockSize: blockSize, NumBlocks: numBlocks, Type: t}
	cache, err := kv.NewCache(cfg)
	if err != nil {
		return nil, fmt.Errorf("backend: device cache: %w", err)
	}
	b := &CPU{m: m, state: model.NewState(c, workers), cache: cache}
	if numHostBlocks > 0 {
		cfg.NumBlocks = numHostBlocks
		if b.host, err = kv.NewCache(cfg); err != nil {
			return nil, fmt.Errorf("backend: host cache: %w", err)
		}
	}
	return b, nil
}

func (b *CPU) Forward(batch *model.Batch, logits []float32) error {
	return b.m.Forward(b.state, batch, b.cache, logits)
}

// KVWindow is the model's: model.Forward reads only each layer's window.
func (b *CPU) KVWindow() int { return b.m.Config.KVWindow() }

func (b *CPU) VocabSize() int     { return b.m.Config.VocabSize }
func (b *CPU) DeviceKind() string { return DeviceCPU }
func (b *CPU) NumBlocks() int     { return b.cache.NumBlocks }
func (b *CPU) BlockSize() int     { return b.cache.BlockSize }

func (b *CPU) NumHostBlocks() int {
	if b.host == nil {
		return 0
	}
	return b.host.NumBlocks
}

func (b *CPU) SwapOut(copies []messages.BlockCopy) error {
	return copyBlocks(b.host, b.cache, copies)
}

func (b *CPU) SwapIn(copies []messages.BlockCopy) error {
	return copyBlocks(b.cache, b.host, copies)
}

// copyBlocks copies blocks c.Src of src to c.Dst of dst, every layer.
func copyBlocks(dst, src *kv.Cache, copies []messages.BlockCopy) error {
	if dst == nil || src == nil {
		return fmt.Errorf("backend: swap with no host tier")
	}
	if dst.RowBytes() != src.RowBytes() || dst.BlockSize != src.BlockSize {
		return fmt.Errorf("backend: block copy between caches of %s and %s", src.Type, dst.Type)
	}
	for _, c := range copies {
		if c.Src < 0 || int(c.Src) >= src.NumBlocks || c.Dst < 0 || int(c.Dst) >= dst.NumBlocks {
			return fmt.Errorf("backend: block copy %d -> %d outside %d -> %d blocks", c.Src, c.Dst, src.NumBlocks, dst.NumBlocks)
		}
		for l := range src.Layers {
			sk, sv := src.Block(l, int(c.Src))
			dk, dv := dst.Block(l, int(c.Dst))
			copy(dk, sk)
			copy(dv, sv)
		}
	}
	return nil
}
