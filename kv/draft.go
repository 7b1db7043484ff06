package kv

import "fmt"

// AppendDraft adds speculative draft tokens at the next positions of
// sequence id, taking blocks as AppendTokens does, but registers no block
// they fill: a draft token may be rejected, and the prefix cache never holds
// a block whose tokens were not accepted. Until AcceptDraft, no other
// append may follow. On error nothing changes: ErrUnknownSeq,
// ErrOutOfBlocks.
func (m *BlockManager) AppendDraft(id SeqID, tokens []int32) error {
	s, ok := m.seqs[id]
	if !ok {
		return fmt.Errorf("kv: append draft to seq %d: %w", id, ErrUnknownSeq)
	}
	if s.draft > 0 {
		return fmt.Errorf("kv: append draft to seq %d: a draft of %d tokens is pending", id, s.draft)
	}
	if need, free := m.numBlocksFor(s.numTokens+len(tokens))-len(s.table), m.NumFreeBlocks(); need > free {
		return fmt.Errorf("kv: append a draft of %d tokens to seq %d: %w: need %d blocks, %d free", len(tokens), id, ErrOutOfBlocks, need, free)
	}
	s.noRegister = true
	m.appendTokens(s, tokens)
	s.noRegister = false
	s.draft = len(tokens)
	return nil
}

// AcceptDraft keeps the first n tokens of id's pending draft and gives back
// the rest: blocks wholly past the kept positions are released (the block
// table is truncated to them) and the slots of a partly kept block are
// forgotten. The blocks the kept tokens filled are registered in the
// prefix cache now, in order. n is clamped to [0, draft]; a sequence with
// no pending draft is left as it is.
func (m *BlockManager) AcceptDraft(id SeqID, n int) error {
	s, ok := m.seqs[id]
	if !ok {
		return fmt.Errorf("kv: accept draft of seq %d: %w", id, ErrUnknownSeq)
	}
	n = min(max(n, 0), s.draft)
	start := s.numTokens - s.draft // first draft position
	keep := start + n
	for len(s.table) > m.numBlocksFor(keep) { // last block first
		m.release(s.table[len(s.table)-1])
		s.table = s.table[:len(s.table)-1]
	}
	if keep%m.blockSize != 0 && len(s.table) > 0 {
		m.blocks[s.table[len(s.table)-1]].n = int32(keep % m.blockSize)
	}
	s.numTokens, s.draft = keep, 0
	if !m.prefixCaching || s.unchained {
		return nil
	}
	// Register, in order, the blocks the accepted tokens filled: those
	// whose last slot is in [start, keep).
	for b := start / m.blockSize; (b+1)*m.blockSize <= keep; b++ {
		if (b+1)*m.blockSize > start {
			m.register(s.table[b], s)
		}
	}
	return nil
}

// DraftLen returns the draft tokens pending for id (see AppendDraft).
func (m *BlockManager) DraftLen(id SeqID) int {
	if s, ok := m.seqs[id]; ok {
		return s.draft
	}
	return 0
}
