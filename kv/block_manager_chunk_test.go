package kv

import "testing"

// Tests of the chunked-prefill API: AllocateUpTo, AppendTokens,
// CanAppendTokens. Block size 4. AllocateUpTo's chunks, NumCachedTokens and
// ResetPrefixCache are traced in testdata/trace (allocate_up_to.txt,
// num_cached.txt, reset.txt).

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
