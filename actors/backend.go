package actors

import (
	"fmt"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// Backend is what a device actor runs: the forward pass over its own KV
// blocks, and copies between those blocks and its host tier. The CPU backend
// wraps model.Model; a CUDA one implements the same. A Backend is used by one
// device actor at a time and outlives its restarts, so the KV blocks of the
// sequences not in a failed step survive.
type Backend interface {
	// Forward runs one micro-batch, writing K/V through the batch's block
	// tables, and stores the logits of the rows with Logits set into logits,
	// (NumLogits, VocabSize).
	Forward(b *model.Batch, logits []float32) error
	// VocabSize is the width of a logits row.
	VocabSize() int
	// NumBlocks and BlockSize give the shape of the device's KV blocks;
	// NumHostBlocks the host tier's block count (0: no swapping).
	NumBlocks() int
	BlockSize() int
	NumHostBlocks() int
	// SwapOut copies device blocks (Src) to host blocks (Dst); SwapIn copies
	// host blocks (Src) to device blocks (Dst). Every layer's K and V move.
	SwapOut(copies []messages.BlockCopy) error
	SwapIn(copies []messages.BlockCopy) error
}

// GreedyBackend is a Backend that can pick a greedy row's token itself
// (a GPU: the logits row need not be copied out). ForwardGreedy is Forward,
// except that ids[r] is the token of logit row r when greedy[r], and only
// the rows with ids[r] == -1 (not greedy, or logits the sampler must judge)
// are stored into logits.
type GreedyBackend interface {
	Backend
	ForwardGreedy(b *model.Batch, greedy []bool, logits []float32, ids []int32) error
}

// CPUBackend runs a model.Model on the CPU over a kv.Cache, with a second,
// bounded kv.Cache as its host tier for swapped-out blocks.
type CPUBackend struct {
	m     *model.Model
	state *model.State
	cache *kv.Cache // (num_blocks) device blocks
	host  *kv.Cache // (num_host_blocks) host tier; nil when 0
}

// NewCPUBackend returns a CPU backend for m with numBlocks KV blocks of
// blockSize tokens, numHostBlocks host-tier blocks, and workers goroutines
// for the forward pass. Its KV cache stores f16.
func NewCPUBackend(m *model.Model, numBlocks, blockSize, numHostBlocks, workers int) (*CPUBackend, error) {
	return NewCPUBackendWithCache(m, kv.F16, numBlocks, blockSize, numHostBlocks, workers)
}

// NewCPUBackendWithCache is NewCPUBackend with a KV cache of type t (the
// host tier's too).
func NewCPUBackendWithCache(m *model.Model, t kv.CacheType, numBlocks, blockSize, numHostBlocks, workers int) (*CPUBackend, error) {
	c := &m.Config
	if t == kv.Q8_0 && c.HeadDim%32 != 0 {
		return nil, fmt.Errorf("actors: a q8_0 KV cache needs a head size that is a multiple of 32 (the model's is %d)", c.HeadDim)
	}
	cfg := kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), BlockSize: blockSize, NumBlocks: numBlocks, Type: t}
	cache, err := kv.NewCache(cfg)
	if err != nil {
		return nil, fmt.Errorf("actors: device cache: %w", err)
	}
	b := &CPUBackend{m: m, state: model.NewState(c, workers), cache: cache}
	if numHostBlocks > 0 {
		cfg.NumBlocks = numHostBlocks
		if b.host, err = kv.NewCache(cfg); err != nil {
			return nil, fmt.Errorf("actors: host cache: %w", err)
		}
	}
	return b, nil
}

func (b *CPUBackend) Forward(batch *model.Batch, logits []float32) error {
	return b.m.Forward(b.state, batch, b.cache, logits)
}

func (b *CPUBackend) VocabSize() int { return b.m.Config.VocabSize }
func (b *CPUBackend) NumBlocks() int { return b.cache.NumBlocks }
func (b *CPUBackend) BlockSize() int { return b.cache.BlockSize }

func (b *CPUBackend) NumHostBlocks() int {
	if b.host == nil {
		return 0
	}
	return b.host.NumBlocks
}

func (b *CPUBackend) SwapOut(copies []messages.BlockCopy) error {
	return copyBlocks(b.host, b.cache, copies)
}

func (b *CPUBackend) SwapIn(copies []messages.BlockCopy) error {
	return copyBlocks(b.cache, b.host, copies)
}

// copyBlocks copies blocks c.Src of src to c.Dst of dst, every layer.
func copyBlocks(dst, src *kv.Cache, copies []messages.BlockCopy) error {
	if dst == nil || src == nil {
		return fmt.Errorf("actors: swap with no host tier")
	}
	if dst.RowBytes() != src.RowBytes() || dst.BlockSize != src.BlockSize {
		return fmt.Errorf("actors: block copy between caches of %s and %s", src.Type, dst.Type)
	}
	for _, c := range copies {
		if c.Src < 0 || int(c.Src) >= src.NumBlocks || c.Dst < 0 || int(c.Dst) >= dst.NumBlocks {
			return fmt.Errorf("actors: block copy %d -> %d outside %d -> %d blocks", c.Src, c.Dst, src.NumBlocks, dst.NumBlocks)
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
