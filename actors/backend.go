package actors

import (
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// Backend is what a device actor runs: the forward pass over its own KV
// blocks, and copies between those blocks and its host tier. Package
// actors/backend has the CPU one (wrapping model.Model) and the CUDA one. A
// Backend is used by one device actor at a time and outlives its restarts,
// so the KV blocks of the sequences not in a failed step survive. A Backend
// that Start makes (Config.NewBackend) and that has a Close() error method is
// closed by Runtime.Stop.
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

// WindowBackend is a Backend whose attention reads, for a token at position
// p, only positions from kv.WindowStart(p, KVWindow()) on, so the batcher
// frees the blocks behind that window (they become kv.NoBlock in the block
// tables it sends). KVWindow is 0 when some layer attends to every position.
// A Backend without it keeps every block of a sequence.
type WindowBackend interface {
	Backend
	KVWindow() int
}

// BackendConfig is the shape of the backend Config.NewBackend makes for a
// device, with Config's defaults filled in.
type BackendConfig struct {
	NumBlocks     int          // KV blocks on the device
	BlockSize     int          // token slots per block
	NumHostBlocks int          // host-tier blocks for swap; 0: none
	Workers       int          // goroutines for a CPU forward pass
	KVCacheType   kv.CacheType // element type of the KV cache (f16, the zero value, or q8_0)
}
