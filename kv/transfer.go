package kv

import (
	"errors"
	"fmt"
)

// Moving K/V blocks between devices of the same shape (disaggregated
// prefill and decode): a BlockManager holds the cached blocks of a prefix
// while a Cache exports them, and on the other side allocates and registers
// the blocks a Cache then imports.

// ErrKVShape is returned when exported blocks do not fit a cache.
var ErrKVShape = errors.New("kv: blocks of another shape")

// ExportedBlockBytes is the size of one exported block: every layer's K
// then V, (layers, 2, block_size, row_bytes).
func (c *Cache) ExportedBlockBytes() int { return c.Layers * 2 * c.BlockSize * c.RowBytes() }

// ExportBlocks appends the K/V of blocks to dst, ExportedBlockBytes each,
// in order: per block, per layer, K then V.
func (c *Cache) ExportBlocks(dst []byte, blocks []int32) ([]byte, error) {
	for _, b := range blocks {
		if b < 0 || int(b) >= c.NumBlocks {
			return dst, fmt.Errorf("kv: export block %d of %d", b, c.NumBlocks)
		}
		for l := range c.Layers {
			k, v := c.Block(l, int(b))
			dst = append(append(dst, k...), v...)
		}
	}
	return dst, nil
}

// ImportBlocks writes data, as ExportBlocks made it, into blocks.
func (c *Cache) ImportBlocks(blocks []int32, data []byte) error {
	n := c.ExportedBlockBytes()
	if len(data) != len(blocks)*n {
		return fmt.Errorf("%w: %d bytes for %d blocks of %d", ErrKVShape, len(data), len(blocks), n)
	}
	for i, b := range blocks {
		if b < 0 || int(b) >= c.NumBlocks {
			return fmt.Errorf("kv: import block %d of %d", b, c.NumBlocks)
		}
		src := data[i*n : (i+1)*n]
		for l := range c.Layers {
			k, v := c.Block(l, int(b))
			src = src[copy(k, src):]
			src = src[copy(v, src):]
		}
	}
	return nil
}

// HoldPrefix makes id a table holding the cached full blocks of tokens
// (under salt) from token from (a multiple of the block size) on, at most
// maxBlocks of them (0: all), so that none is evicted until Free(id). It
// returns those blocks, in order: possibly none. The lookup is
// AllocateUpTo's (never the block of the last token) and counts no query.
func (m *BlockManager) HoldPrefix(id SeqID, salt uint64, tokens []int32, from, maxBlocks int) ([]int32, error) {
	if _, ok := m.seqs[id]; ok {
		return nil, fmt.Errorf("kv: hold seq %d: %w", id, ErrSeqExists)
	}
	if from < 0 || from%m.blockSize != 0 {
		return nil, fmt.Errorf("kv: hold seq %d: from %d is not a block boundary", id, from)
	}
	hits := m.lookup(salt, tokens, m.hits[:0])
	skip := from / m.blockSize
	if skip >= len(hits) {
		return nil, nil
	}
	hits = hits[skip:]
	if maxBlocks > 0 && len(hits) > maxBlocks {
		hits = hits[:maxBlocks]
	}
	s := m.newSeq(skip + len(hits))
	s.salt, s.dead = salt, skip
	for range skip {
		s.table = append(s.table, NoBlock)
	}
	for _, b := range hits {
		m.share(b)
		s.table = append(s.table, b)
	}
	s.numTokens = len(s.table) * m.blockSize
	m.seqs[id] = s
	return s.table[skip:], nil
}

// ImportPrefix makes id a table over tokens[:end] (end a multiple of the
// block size) whose first blocks are the cached ones and the rest new
// blocks, registered now for sharing: the caller writes their K/V (on the
// device, before any later step) and then frees id, leaving them cached.
// It returns the tokens cached before (cached) and the new blocks, which
// hold tokens [cached, end). Nothing is allocated when cached < from (a
// gap: blocks after a missing one are found by no lookup) or cached >= end.
// Errors: ErrSeqExists, ErrOutOfBlocks.
func (m *BlockManager) ImportPrefix(id SeqID, salt uint64, tokens []int32, from, end int) (cached int, blocks []int32, err error) {
	if end%m.blockSize != 0 || from%m.blockSize != 0 || from < 0 || end > len(tokens) {
		return 0, nil, fmt.Errorf("kv: import seq %d: tokens [%d, %d) of %d are not whole blocks", id, from, end, len(tokens))
	}
	probe := make([]int32, end+1) // a last token past the blocks: lookup covers all of them
	copy(probe, tokens[:end])
	cached = m.NumCachedTokens(salt, probe)
	if !m.prefixCaching || cached < from || cached >= end {
		return cached, nil, nil
	}
	queries, hitsBefore := m.prefixQueries, m.prefixHits
	got, err := m.allocate(id, salt, probe, end, 0, true)
	m.prefixQueries, m.prefixHits = queries, hitsBefore
	if err != nil {
		return cached, nil, err
	}
	if got != cached {
		panic(fmt.Sprintf("kv: import seq %d: %d tokens cached, then %d", id, cached, got))
	}
	return cached, m.seqs[id].table[cached/m.blockSize:], nil
}
