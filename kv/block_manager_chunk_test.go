package kv

import (
	"slices"
	"testing"
)

// Tests of the chunked-prefill API: AllocateUpTo, AppendTokens,
// CanAppendTokens. Block size 4. NumCachedTokens and ResetPrefixCache are
// traced in testdata/trace (num_cached.txt, reset.txt).

func TestAllocateUpTo(t *testing.T) {
	const bs = 4
	prompt := span(100, 14) // 3 full blocks and 2 tokens
	for _, tc := range []struct {
		name       string
		warm       []int32 // computed and freed first, so its full blocks are cached
		numTokens  int
		wantCached int
		wantCover  int // positions the new table covers
	}{
		{"first chunk", nil, 6, 0, 6},
		{"chunk of whole blocks", nil, 8, 0, 8},
		{"whole prompt", nil, 14, 0, 14},
		{"past the prompt", nil, 99, 0, 14},
		{"zero tokens: one at least", nil, 0, 0, 1},
		{"negative tokens: one at least", nil, -3, 0, 1},
		{"chunk inside the cached prefix: one past it", span(100, 10), 5, 8, 9},
		{"chunk past the cached prefix", span(100, 10), 11, 8, 11},
		{"cached prefix, whole prompt", prompt, 14, 12, 14},
		{"cached prefix, zero tokens", prompt, 0, 12, 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewBlockManager(8, bs, true)
			if tc.warm != nil {
				mustAllocate(t, m, 9, tc.warm)
				mustFree(t, m, 9)
			}
			before := m.Stats()
			if got := m.NumCachedTokens(0, prompt); got != tc.wantCached {
				t.Errorf("NumCachedTokens %d, want %d", got, tc.wantCached)
			}
			cached, err := m.AllocateUpTo(1, prompt, tc.numTokens)
			if err != nil {
				t.Fatal(err)
			}
			mustCheck(t, m)
			if cached != tc.wantCached || m.NumTokens(1) != tc.wantCover ||
				len(m.BlockTable(1)) != (tc.wantCover+bs-1)/bs {
				t.Errorf("cached %d, table of %d blocks covering %d; want %d, covering %d",
					cached, len(m.BlockTable(1)), m.NumTokens(1), tc.wantCached, tc.wantCover)
			}
			// One query of the whole prompt, whatever the table covers.
			s := m.Stats()
			if q, h := s.PrefixQueries-before.PrefixQueries, s.PrefixHits-before.PrefixHits; q != 14 || h != int64(tc.wantCached) {
				t.Errorf("counted %d queries, %d hits; want 14, %d", q, h, tc.wantCached)
			}
			// Only blocks the table fills are registered: another sequence
			// finds the full blocks of the covered positions, no more.
			if got, want := m.NumCachedTokens(0, prompt), max(tc.wantCached, tc.wantCover/bs*bs); got != min(want, 12) {
				t.Errorf("after: NumCachedTokens %d, want %d", got, min(want, 12))
			}
			// AppendTokens covers the rest; then the prompt's blocks are all
			// registered.
			if err := m.AppendTokens(1, prompt[tc.wantCover:]); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, m)
			if m.NumTokens(1) != 14 || m.NumCachedTokens(0, prompt) != 12 {
				t.Errorf("after the rest: %d tokens, %d cached", m.NumTokens(1), m.NumCachedTokens(0, prompt))
			}
			if got := mustAllocate(t, m, 2, prompt); got != 12 {
				t.Errorf("a second sequence finds %d cached tokens, want 12", got)
			}
			if !slices.Equal(m.BlockTable(2)[:3], m.BlockTable(1)[:3]) {
				t.Errorf("tables %v and %v do not share the prompt's blocks", m.BlockTable(1), m.BlockTable(2))
			}
		})
	}
}

func TestAllocateUpToAllOrNothing(t *testing.T) {
	const bs = 4
	prompt := span(100, 14)
	t.Run("out of blocks for the chunk", func(t *testing.T) {
		m := NewBlockManager(4, bs, true)
		mustAllocate(t, m, 1, span(0, 9)) // 3 blocks, 1 free
		if _, err := m.AllocateUpTo(2, prompt, 4); err != nil {
			t.Fatalf("a one-block chunk with one free block: %v", err)
		}
		mustFree(t, m, 2)
		// Two blocks with one free: nothing changes, nothing is counted.
		expectUnchanged(t, m, ErrOutOfBlocks, func() error { _, err := m.AllocateUpTo(3, prompt, 5); return err })
	})
	t.Run("hits on blocks in use take no free block", func(t *testing.T) {
		m := NewBlockManager(4, bs, true)
		mustAllocate(t, m, 1, span(100, 12)) // 3 blocks, 1 free
		long := span(100, 18)
		cached, err := m.AllocateUpTo(2, long, 13)
		if err != nil || cached != 12 || m.NumFreeBlocks() != 0 {
			t.Fatalf("cached %d, %v, %d free; want 12 (3 blocks shared, 1 new), 0 free", cached, err, m.NumFreeBlocks())
		}
		mustCheck(t, m)
		expectUnchanged(t, m, ErrOutOfBlocks, func() error { return m.AppendTokens(2, long[13:]) })
	})
	t.Run("errors", func(t *testing.T) {
		m := NewBlockManager(4, bs, true)
		mustAllocate(t, m, 1, span(0, 3))
		expectUnchanged(t, m, ErrSeqExists, func() error { _, err := m.AllocateUpTo(1, prompt, 4); return err })
		before := takeSnapshot(m)
		if _, err := m.AllocateUpTo(2, nil, 4); err == nil {
			t.Error("AllocateUpTo of an empty prompt succeeded")
		}
		if !takeSnapshot(m).equal(before) {
			t.Error("a failed AllocateUpTo changed the manager")
		}
	})
}
