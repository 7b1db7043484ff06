package kv

import "fmt"

// NoBlock is the block-table entry of a block freed because every layer's
// sliding window has passed it (FreeBefore): the forward pass never reads it.
const NoBlock int32 = -1

// WindowStart is the first position the token at position pos attends to
// when every layer attends to the last window positions (its own
// included): pos-window+1, at least 0; 0 when window is 0 (some layer
// attends to every position). For a sequence of n tokens, WindowStart(n,
// window) is the first position any later token can need, so its blocks
// wholly before it can be freed. This is llama.cpp's is_masked_swa (a cell
// at p0 is masked for p1 when p1-p0 >= n_swa) and vLLM's sliding-window
// num_skipped_tokens (num_computed_tokens - sliding_window + 1).
func WindowStart(pos, window int) int {
	if window <= 0 {
		return 0
	}
	return max(0, pos-window+1)
}

// AllocateFrom is AllocateUpTo for a sequence that no longer needs the
// positions before from (from is at most the first position the step
// computes, and comes from WindowStart): the table's blocks wholly before
// from are NoBlock, no cache hit there is shared, and no block is taken for
// them. A prefix hit still needs the cached chain from the first block, but
// only the hits at or after from's block enter the table. Blocks filled
// after positions that are neither in the table nor cache hits are not
// registered for sharing (their parent's content is unknown).
//
// salt keeps the blocks of sequences whose K/V differs for the same tokens
// apart (a LoRA adapter set; 0: the base model): only blocks registered
// under the same salt are hits (SaltRootHash).
func (m *BlockManager) AllocateFrom(id SeqID, salt uint64, tokens []int32, numTokens, from int) (numCachedTokens int, err error) {
	return m.allocate(id, salt, tokens, numTokens, from, true)
}

// FreeBefore releases the blocks of sequence id that lie wholly before
// position pos, which no later step reads (pos from WindowStart, after the
// step that computed the sequence's last position has run), and returns how
// many it released. Their entries become NoBlock; positions, the table's
// length and NumTokens are unchanged, so the forward pass still finds every
// position at or after pos at its place. Registered full blocks stay cached
// as after Free: their K/V is complete, so a later prompt with the same
// prefix may hit them (its lookup still walks the chain from the first
// block). Being freed first, they are also evicted before the sequence's
// later blocks, which no lookup reaches then: a lost hit, never a wrong one.
// The block holding the last position is never released.
func (m *BlockManager) FreeBefore(id SeqID, pos int) (int, error) {
	s, ok := m.seqs[id]
	if !ok {
		return 0, fmt.Errorf("kv: free before %d in seq %d: %w", pos, id, ErrUnknownSeq)
	}
	end := min(max(pos, 0), s.numTokens-1) / m.blockSize
	n := 0
	for i := s.dead; i < end; i++ {
		m.release(s.table[i])
		s.table[i] = NoBlock
		n++
	}
	s.dead = max(s.dead, end)
	m.windowFreed += int64(n)
	return n, nil
}

// NumLiveBlocks returns the blocks the table of id holds (NoBlock entries
// not counted), 0 if unknown.
func (m *BlockManager) NumLiveBlocks(id SeqID) int {
	if s, ok := m.seqs[id]; ok {
		return len(s.table) - s.dead
	}
	return 0
}

// NumFreed returns how many entries lead table as NoBlock: blocks freed
// behind a sliding window.
func NumFreed(table []int32) int {
	n := 0
	for n < len(table) && table[n] == NoBlock {
		n++
	}
	return n
}
