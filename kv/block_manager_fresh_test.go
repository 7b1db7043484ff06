package kv

import (
	"slices"
	"testing"
)

// TestAllocateFresh checks that AllocateFresh shares no block with a cached
// prefix, counts no query, and still registers the blocks it fills.
func TestAllocateFresh(t *testing.T) {
	m := NewBlockManager(8, 4, true)
	p := span(100, 10)
	if _, err := allocate(m, 1, p); err != nil {
		t.Fatal(err)
	}
	before := m.Stats()
	if err := m.AllocateFresh(2, 0, p, len(p), 0); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, m)
	t1, t2 := m.BlockTable(1), m.BlockTable(2)
	for _, b := range t2 {
		if slices.Contains(t1, b) {
			t.Fatalf("fresh table %v shares block %d with %v", t2, b, t1)
		}
	}
	if st := m.Stats(); st.PrefixQueries != before.PrefixQueries || st.PrefixHits != before.PrefixHits {
		t.Errorf("AllocateFresh counted a query: %+v, before %+v", st, before)
	}
	if err := m.AllocateFresh(2, 0, p, len(p), 0); err == nil {
		t.Error("AllocateFresh of an allocated id succeeded")
	}
	// Both owners gone, the prefix is still found.
	_ = m.Free(1)
	_ = m.Free(2)
	if got := m.NumCachedTokens(0, p); got != 8 {
		t.Errorf("after freeing, %d tokens cached, want 8", got)
	}
	mustCheck(t, m)
}
