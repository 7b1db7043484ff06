package actors

import (
	"cmp"
	"fmt"
	"time"

	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/lora"
)

// Config sets up a Runtime. Besides NewBackend (or Backends), the zero value
// serves one device with vLLM-like defaults sized for this kind of machine.
type Config struct {
	// Devices is the number of device replicas on this node; 0: 1.
	Devices int
	// Workers is the goroutines each CPU device uses for a forward pass; 0: 2.
	Workers int
	// NumBlocks is the KV blocks per device; 0: enough for MaxNumSeqs
	// sequences of 512 tokens or 4 full contexts, whichever is more, at most
	// 2 GiB of K/V.
	NumBlocks int
	// BlockSize is the token slots per KV block; 0: 16.
	BlockSize int
	// NumHostBlocks is the host tier per device for Swap preemption; 0 with
	// Swap: as many as NumBlocks.
	NumHostBlocks int
	// MaxNumSeqs and MaxNumBatchedTokens bound one step (vLLM's
	// max_num_seqs and max_num_batched_tokens); 0: 64 and 512.
	MaxNumSeqs, MaxNumBatchedTokens int
	// MaxModelLen is the positions per sequence; 0: the model's context.
	MaxModelLen int
	// Preemption is how a sequence gives back its blocks: sched.Recompute
	// (the default) or sched.Swap.
	Preemption sched.Preemption
	// NoPrefixCaching turns automatic prefix caching off.
	NoPrefixCaching bool
	// Window is how long the batcher waits, after the first ready work, for
	// more before it dispatches a step that the size trigger has not
	// fired; 0: 2ms.
	Window time.Duration
	// NewBackend makes device i's backend, once the fields above have
	// their defaults (package actors/backend: backend.For). Start calls it
	// for each of Devices when Backends is empty, and Stop closes what it
	// made.
	NewBackend func(device int, c BackendConfig) (Backend, error)
	// KVCacheType is the element type of the KV cache (f16, the zero
	// value, or q8_0: CPU devices only).
	KVCacheType kv.CacheType
	// Pooling is how Embed pools an input's token states when its caller
	// does not say; model.PoolingNone: the model file's, else mean.
	Pooling model.Pooling
	// Backends, when set, are the devices (one per entry) instead of the
	// ones NewBackend would make: a test's, or any other. The caller closes
	// them.
	Backends []Backend
	// Speculative sets speculative decoding; the zero value is off.
	Speculative SpecConfig
	// LoRA is the runtime's loaded LoRA adapters: a request's lora ids
	// (messages.GenerateRequest.LoRA) index it, and a request without a
	// lora field runs with every one at its Scale (llama-server's --lora).
	// nil: the model's own (model.Model.SetAdapters). Only CPU devices
	// apply adapters. The caller keeps them open while the runtime runs.
	LoRA []lora.Scaled
	// Encoder, when set, takes images (a multimodal projector opened for
	// the model: *vision.Projector, checked against the model's width by
	// Start); nil: requests with images are refused.
	Encoder ImageEncoder
}

// kvBytesCap bounds the default KV cache size.
const kvBytesCap = 2 << 30

// withDefaults fills c's zero fields for a model of context ctxLen whose
// K/V take kvBytesPerToken bytes per token.
func (c Config) withDefaults(ctxLen, kvBytesPerToken int) Config {
	if c.Devices == 0 {
		c.Devices = max(1, len(c.Backends))
	}
	c.Workers = cmp.Or(c.Workers, 2)
	// The scheduler's own defaults for what it shares with Config.
	sc := sched.Config{MaxNumSeqs: c.MaxNumSeqs, MaxNumBatchedTokens: c.MaxNumBatchedTokens, BlockSize: c.BlockSize}.WithDefaults()
	c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize = sc.MaxNumSeqs, sc.MaxNumBatchedTokens, sc.BlockSize
	c.MaxModelLen = cmp.Or(c.MaxModelLen, ctxLen)
	if c.NumBlocks == 0 {
		tokens := max(c.MaxNumSeqs*512, 4*c.MaxModelLen)
		tokens = min(tokens, max(c.MaxModelLen, kvBytesCap/max(kvBytesPerToken, 1)))
		c.NumBlocks = (tokens + c.BlockSize - 1) / c.BlockSize
	}
	if c.NumHostBlocks == 0 && c.Preemption == sched.Swap {
		c.NumHostBlocks = c.NumBlocks
	}
	c.Window = cmp.Or(c.Window, 2*time.Millisecond)
	c.Speculative = c.Speculative.withDefaults()
	return c
}

// WithDefaults is c with the defaults Start fills in for a model of
// configuration mc: what Runtime.Config reports once it runs (so that a
// caller can size a model's KV pool before starting it).
func (c Config) WithDefaults(mc *model.Config) Config {
	return c.withDefaults(mc.ContextLen, 2*mc.Layers*c.KVCacheType.RowBytes(mc.KVDim()))
}

// KVCacheBytes is the memory of one device's KV blocks (K and V, every
// layer) for a model of configuration mc, with c's defaults applied (as
// Runtime.Config returns it); the host tier for swap adds NumHostBlocks
// blocks of the same size.
func (c Config) KVCacheBytes(mc *model.Config) int64 {
	cc := kv.CacheConfig{Layers: mc.Layers, KVDim: mc.KVDim(), BlockSize: c.BlockSize, NumBlocks: c.NumBlocks, Type: c.KVCacheType}
	return cc.Bytes()
}

// validate reports the first impossible value of a defaulted c.
func (c Config) validate() error {
	switch {
	case c.Devices < 1:
		return fmt.Errorf("actors: devices %d < 1", c.Devices)
	case len(c.Backends) > 0 && len(c.Backends) != c.Devices:
		return fmt.Errorf("actors: %d backends for %d devices", len(c.Backends), c.Devices)
	case len(c.Backends) == 0 && c.NewBackend == nil:
		return fmt.Errorf("actors: no devices: set Config.NewBackend (actors/backend.For) or Config.Backends")
	case c.Workers < 1:
		return fmt.Errorf("actors: workers %d < 1", c.Workers)
	case c.Window < 0:
		return fmt.Errorf("actors: negative batching window %v", c.Window)
	}
	if err := c.Speculative.validate(c.MaxModelLen); err != nil {
		return err
	}
	return c.schedConfig(nil).Validate()
}

// schedConfig is the scheduler configuration for a device; a Backend, when
// given, has the last word on the shape of its blocks.
func (c Config) schedConfig(be Backend) sched.Config {
	sc := sched.Config{
		MaxNumSeqs: c.MaxNumSeqs, MaxNumBatchedTokens: c.MaxNumBatchedTokens, MaxModelLen: c.MaxModelLen,
		NumBlocks: c.NumBlocks, BlockSize: c.BlockSize, NoPrefixCaching: c.NoPrefixCaching,
		Preemption: c.Preemption, NumHostBlocks: c.NumHostBlocks, SpecMaxSeqs: c.Speculative.schedSpecMaxSeqs(),
	}
	if be != nil {
		sc.NumBlocks, sc.BlockSize, sc.NumHostBlocks = be.NumBlocks(), be.BlockSize(), be.NumHostBlocks()
	}
	if wb, ok := be.(WindowBackend); ok {
		sc.Window = wb.KVWindow()
	}
	return sc
}

// commonKVWindow is the sliding window behind which every device frees a
// sequence's blocks (WindowBackend), 0 when some device keeps them all.
func commonKVWindow(backends []Backend) int {
	w := 0
	for i, be := range backends {
		wb, ok := be.(WindowBackend)
		if !ok || wb.KVWindow() == 0 || i > 0 && wb.KVWindow() != w {
			return 0
		}
		w = wb.KVWindow()
	}
	return w
}
