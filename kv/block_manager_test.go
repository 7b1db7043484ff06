package kv

import (
	"maps"
	"slices"
	"testing"
)

// span returns the n tokens start, start+1, ...
func span(start, n int) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(start + i)
	}
	return t
}

func cat(parts ...[]int32) []int32 { return slices.Concat(parts...) }

// mustCheck fails t if m breaks an invariant.
func mustCheck(t *testing.T, m *BlockManager) {
	t.Helper()
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
}

// allocate gives id a table covering all of its prompt tokens, as the
// scheduler does when a prompt fits its token budget.
func allocate(m *BlockManager, id SeqID, tokens []int32) (numCachedTokens int, err error) {
	return m.AllocateUpTo(id, tokens, len(tokens))
}

// canAllocate reports whether allocate of tokens would succeed now, counting
// the blocks it would share: the all-or-nothing check of AllocateUpTo, made
// from the outside.
func canAllocate(m *BlockManager, tokens []int32) bool { return canAllocateFrom(m, tokens, 0) }

// canAllocateFrom is canAllocate for AllocateFrom(id, tokens, len(tokens),
// from): the blocks wholly before from are neither taken nor shared.
func canAllocateFrom(m *BlockManager, tokens []int32, from int) bool {
	if len(tokens) == 0 {
		return false
	}
	hits, dead := m.lookup(0, tokens, nil), min(from, len(tokens)-1)/m.blockSize
	return m.needFor(hits[min(dead, len(hits)):], len(tokens))-dead <= m.NumFreeBlocks()
}

// appendToken adds one decode token.
func appendToken(m *BlockManager, id SeqID, token int32) error {
	return m.AppendTokens(id, []int32{token})
}

func mustAllocate(t *testing.T, m *BlockManager, id SeqID, tokens []int32) int {
	t.Helper()
	n, err := allocate(m, id, tokens)
	if err != nil {
		t.Fatalf("allocate(%d): %v", id, err)
	}
	mustCheck(t, m)
	return n
}

func mustFree(t *testing.T, m *BlockManager, id SeqID) {
	t.Helper()
	if err := m.Free(id); err != nil {
		t.Fatalf("Free(%d): %v", id, err)
	}
	mustCheck(t, m)
}

// cachedTokens is what allocate of tokens would find cached, without
// changing m (LRU order included).
func cachedTokens(m *BlockManager, tokens []int32) int {
	return len(m.lookup(0, tokens, nil)) * m.blockSize
}

// Prefix hits are traced in testdata/trace/prefix_hits.txt.

// Hash collisions and duplicate blocks are traced in testdata/trace
// (collisions.txt, duplicates.txt).

// snapshot is the whole state of a BlockManager, for all-or-nothing checks.
type snapshot struct {
	blocks     []block
	tokens     []int32
	prev, next []int32
	cached     map[uint64]int32
	tables     map[SeqID][]int32
	stats      BlockStats
}

func takeSnapshot(m *BlockManager) snapshot {
	s := snapshot{
		blocks: slices.Clone(m.blocks), tokens: slices.Clone(m.tokens),
		prev: slices.Clone(m.free.prev), next: slices.Clone(m.free.next),
		cached: maps.Clone(m.cached), tables: map[SeqID][]int32{}, stats: m.Stats(),
	}
	for id, q := range m.seqs {
		s.tables[id] = slices.Clone(q.table)
	}
	return s
}

func (s snapshot) equal(o snapshot) bool {
	return slices.Equal(s.blocks, o.blocks) && slices.Equal(s.tokens, o.tokens) &&
		slices.Equal(s.prev, o.prev) && slices.Equal(s.next, o.next) &&
		maps.Equal(s.cached, o.cached) && s.stats == o.stats &&
		maps.EqualFunc(s.tables, o.tables, slices.Equal[[]int32])
}

// Allocations all or nothing, decoding, running without prefix caching and
// refused calls are traced in testdata/trace (all_or_nothing.txt,
// decode.txt, errors.txt).
