package sched

import (
	"cmp"
	"errors"
	"fmt"
)

// Preemption is how a preempted sequence gives its blocks back.
type Preemption int

const (
	// Recompute frees the victim's blocks; it recomputes its tokens when it
	// is admitted again (often partly from the prefix cache).
	Recompute Preemption = iota
	// Swap copies the victim's blocks to the host tier and back before it
	// runs again; when the host tier is full it falls back to Recompute.
	Swap
)

func (p Preemption) String() string {
	if p == Swap {
		return "swap"
	}
	return "recompute"
}

// Config is a Scheduler's budget and the shape of its device's KV cache.
type Config struct {
	MaxNumSeqs          int // sequences per step; 0: 64
	MaxNumBatchedTokens int // tokens per step; 0: 512
	MaxModelLen         int // positions per sequence (prompt and output); required
	NumBlocks           int // device KV blocks; required
	BlockSize           int // token slots per block; 0: 16
	NoPrefixCaching     bool
	Preemption          Preemption
	NumHostBlocks       int // host-tier blocks for Swap
	// Window, when not 0, says every layer of the model attends only to the
	// last Window positions (model.Config.KVWindow): after each step a
	// sequence's blocks wholly before kv.WindowStart(NumComputed, Window)
	// are freed, and a sequence needs only the blocks of one window and one
	// step at a time.
	Window int
	// SpecMaxSeqs bounds speculative decoding: a sequence's draft is
	// scheduled only while at most this many sequences run on the device
	// (past that, verifying drafts costs more than it saves); 0: no bound.
	SpecMaxSeqs int
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.MaxNumSeqs = cmp.Or(c.MaxNumSeqs, 64)
	c.MaxNumBatchedTokens = cmp.Or(c.MaxNumBatchedTokens, 512)
	c.BlockSize = cmp.Or(c.BlockSize, 16)
	return c
}

// Validate reports the first impossible value of c (after defaults).
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.MaxNumSeqs < 1:
		return fmt.Errorf("sched: max_num_seqs %d < 1", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens < 1:
		return fmt.Errorf("sched: max_num_batched_tokens %d < 1", c.MaxNumBatchedTokens)
	case c.MaxModelLen < 2:
		return fmt.Errorf("sched: max_model_len %d < 2", c.MaxModelLen)
	case c.NumBlocks < 1:
		return fmt.Errorf("sched: num_blocks %d < 1", c.NumBlocks)
	case c.BlockSize < 1:
		return fmt.Errorf("sched: block_size %d < 1", c.BlockSize)
	case c.Window < 0:
		return fmt.Errorf("sched: window %d < 0", c.Window)
	case c.NumHostBlocks < 0:
		return fmt.Errorf("sched: num_host_blocks %d < 0", c.NumHostBlocks)
	case c.Preemption != Recompute && c.Preemption != Swap:
		return fmt.Errorf("sched: unknown preemption mode %d", c.Preemption)
	}
	return nil
}

// ErrNeverFits is wrapped by Add's error for a sequence that could not run
// even alone on an idle device.
var ErrNeverFits = errors.New("sequence can never fit")
