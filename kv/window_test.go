package kv

import (
	"slices"
	"testing"
)

// TestWindowStart checks WindowStart against llama.cpp's is_masked_swa for
// LLAMA_SWA_TYPE_STANDARD: the token at p1 does not see p0 when
// p1 - p0 >= n_swa.
func TestWindowStart(t *testing.T) {
	for _, tc := range []struct{ pos, window, want int }{
		{0, 0, 0}, {100, 0, 0}, {0, 8, 0}, {7, 8, 0}, {8, 8, 1}, {100, 8, 93}, {5, 1, 5},
	} {
		if got := WindowStart(tc.pos, tc.window); got != tc.want {
			t.Errorf("WindowStart(%d, %d) = %d, want %d", tc.pos, tc.window, got, tc.want)
		}
	}
	for _, w := range []int{1, 2, 3, 8} {
		for p1 := range 20 {
			for p0 := 0; p0 <= p1; p0++ {
				masked := p1-p0 >= w
				if seen := p0 >= WindowStart(p1, w); seen == masked {
					t.Fatalf("window %d: position %d sees %d: %v, llama.cpp masks it: %v", w, p1, p0, seen, masked)
				}
			}
		}
	}
}

// FreeBefore and AllocateFrom are traced in testdata/trace (window.txt,
// allocate_from.txt).

// TestWindowPrefix: blocks freed behind the window stay cached, so a later
// prompt with the same prefix hits them; a block filled after its parent was
// freed and reused for other content still registers under its own prefix,
// and is found by no lookup once that parent is gone.
func TestWindowPrefix(t *testing.T) {
	m := NewBlockManager(4, 4, true)
	a := span(0, 8)
	mustAllocate(t, m, 1, a[:7])                  // blocks #0 (full) and #1 (3 tokens)
	if _, err := m.FreeBefore(1, 6); err != nil { // #0 goes to the cached free list
		t.Fatal(err)
	}
	if got := cachedTokens(m, a); got != 4 {
		t.Fatalf("block freed behind the window: %d tokens cached, want 4", got)
	}
	// Another sequence takes every other free block, evicting #0's.
	mustAllocate(t, m, 2, span(100, 9))
	if got := cachedTokens(m, a); got != 0 {
		t.Fatalf("after eviction: %d tokens cached, want 0", got)
	}
	mustFree(t, m, 2)
	// #1 fills now: its parent's block holds sequence 2's tokens, yet #1
	// registers under a[:8].
	if err := appendToken(m, 1, a[7]); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, m)
	b1 := m.BlockTable(1)[1]
	if want := BlockHash(BlockHash(RootHash, a[:4]), a[4:8]); m.blocks[b1].hash != want || m.cached[want] != b1 {
		t.Fatalf("block #1 registered as %x, want %x", m.blocks[b1].hash, want)
	}
	// The chain from the root is broken (#0 was evicted): no hit, no wrong hit.
	if got := cachedTokens(m, append(slices.Clone(a), 1)); got != 0 {
		t.Fatalf("%d tokens cached without the first block", got)
	}
	// Computed again, block #0 is new content to the cache (a new content
	// id): #1, which chained to the evicted one, stays orphaned. A lost hit,
	// never a wrong one.
	mustAllocate(t, m, 3, a[:5])
	if got := cachedTokens(m, append(slices.Clone(a), 1)); got != 4 {
		t.Fatalf("%d tokens cached with the first block back, want 4", got)
	}
}
