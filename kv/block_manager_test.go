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

// upTo returns the tokens of p up to the end of block k (block size 4).
func upTo(p []int32, k int) []int32 { return p[:min(len(p), (k+1)*4)] }

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

// TestHashCollision forces colliding hashes: a collision may cost a hit but
// must never give one.
func TestHashCollision(t *testing.T) {
	x, y, z, one := span(1, 4), span(5, 4), span(9, 4), span(0, 1)
	for _, tc := range []struct {
		name string
		hash func(uint64, []int32) uint64
		// Allocated in order; want is the cached tokens of each.
		prompts [][]int32
		want    []int
	}{
		{"every block collides", func(uint64, []int32) uint64 { return 42 },
			// One slot for all: each new block takes it. Only x alone finds
			// x, never x at position 4 or the x that followed another x.
			[][]int32{cat(x, one), cat(z, one), cat(x, one), cat(x, one), cat(x, x, one), cat(x, one)},
			[]int{0, 0, 0, 4, 4, 0}},
		{"hash ignores the parent", func(_ uint64, t []int32) uint64 { return BlockHash(RootHash, t) },
			// y after z takes y's slot from y after x; x y must then not hit
			// the y computed after z, whose tokens match but whose K/V do not.
			[][]int32{cat(x, y, one), cat(z, y, one), cat(x, y, one, one), cat(z, y, one, one, one), cat(z, y, z)},
			[]int{0, 0, 4, 4, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewBlockManager(32, 4, true)
			m.hash = tc.hash
			for i, p := range tc.prompts {
				id := SeqID(i + 1)
				if got := mustAllocate(t, m, id, p); got != tc.want[i] {
					t.Errorf("prompt %d: %d cached tokens, want %d", i, got, tc.want[i])
				}
				// Every shared block must hold this prompt's prefix: same
				// block position in an earlier table with the same prefix.
				table := m.BlockTable(id)
				for j := SeqID(1); j < id; j++ {
					other := m.BlockTable(j)
					for k := range min(len(table), len(other)) {
						if table[k] == other[k] && !slices.Equal(upTo(p, k), upTo(tc.prompts[j-1], k)) {
							t.Errorf("prompt %d shares block %d with prompt %d but not its prefix", i, table[k], j-1)
						}
					}
				}
			}
		})
	}
}

// TestDuplicateBlocks: two choices of one prompt append the same tokens, so
// the second fills a block equal to a registered one. It stays unregistered, but the blocks
// after it chain to the registered one and are found through it.
func TestDuplicateBlocks(t *testing.T) {
	x, y, z, one := span(1, 4), span(5, 4), span(9, 4), span(0, 1)
	for _, tc := range []struct {
		name string
		hash func(uint64, []int32) uint64
	}{
		{"fnv", BlockHash},
		{"hash ignores the parent", func(_ uint64, t []int32) uint64 { return BlockHash(RootHash, t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewBlockManager(16, 4, true)
			m.hash = tc.hash
			mustAllocate(t, m, 1, cat(x, y[:1]))
			if got := mustAllocate(t, m, 2, cat(x, y[:1])); got != 4 {
				t.Fatalf("second choice: %d cached tokens, want 4", got)
			}
			for _, step := range []struct {
				id     SeqID
				tokens []int32
			}{{1, y[1:]}, {2, y[1:]}, {2, z}} {
				for _, tok := range step.tokens {
					if err := appendToken(m, step.id, tok); err != nil {
						t.Fatal(err)
					}
				}
				mustCheck(t, m)
			}
			t1, t2 := m.BlockTable(1), m.BlockTable(2)
			if m.blocks[t2[1]].cached || !m.blocks[t1[1]].cached {
				t.Errorf("y of seq 2 registered %v, of seq 1 %v; want false, true", m.blocks[t2[1]].cached, m.blocks[t1[1]].cached)
			}
			if got := mustAllocate(t, m, 3, cat(x, y, z, one)); got != 12 {
				t.Errorf("x y z: %d cached tokens, want 12", got)
			}
			if got, want := m.BlockTable(3)[:3], []int32{t1[0], t1[1], t2[2]}; !slices.Equal(got, want) {
				t.Errorf("x y z shares %v, want %v", got, want)
			}
			if got := mustAllocate(t, m, 4, cat(z, one)); got != 0 {
				t.Errorf("z alone: %d cached tokens, want 0", got)
			}
		})
	}
}

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
