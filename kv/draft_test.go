package kv

import (
	"slices"
	"testing"
)

// TestAcceptDraft: draft slots take blocks like any token, but the prefix
// cache only ever holds blocks of accepted tokens; rejected slots are given
// back and the table truncated.
func TestAcceptDraft(t *testing.T) {
	prompt := span(100, 6) // blocks of 4: [100..103] full, [104 105 _ _]
	cases := []struct {
		name       string
		draft      []int32
		accept     int
		wantTokens int
		wantBlocks int // table length after AcceptDraft
		wantCached int // NumCachedTokens of prompt+accepted+1 more token
	}{
		{"all rejected", span(200, 7), 0, 6, 2, 4},
		{"two accepted: block 1 filled", span(200, 7), 2, 8, 2, 8},
		{"five accepted: one slot into block 2", span(200, 7), 5, 11, 3, 8},
		{"all accepted", span(200, 6), 6, 12, 3, 12},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewBlockManager(8, 4, true)
			mustAllocate(t, m, 1, prompt)
			free := m.NumFreeBlocks()
			if err := m.AppendDraft(1, tc.draft); err != nil {
				t.Fatal(err)
			}
			if err := m.AcceptDraft(1, tc.accept); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, m)
			if got := m.NumTokens(1); got != tc.wantTokens {
				t.Errorf("NumTokens %d, want %d", got, tc.wantTokens)
			}
			if got := len(m.BlockTable(1)); got != tc.wantBlocks {
				t.Errorf("table of %d blocks, want %d", got, tc.wantBlocks)
			}
			if got, want := m.NumFreeBlocks(), free-(tc.wantBlocks-2); got != want {
				t.Errorf("%d free blocks, want %d", got, want)
			}
			accepted := cat(prompt, tc.draft[:tc.accept])
			if got := m.NumCachedTokens(0, cat(accepted, span(900, 1))); got != tc.wantCached {
				t.Errorf("%d tokens cached, want %d", got, tc.wantCached)
			}
			// A rejected draft token never hits: the same prefix with the
			// rejected token in place finds only what the accepted part filled.
			if tc.accept < len(tc.draft) {
				rejected := cat(prompt, tc.draft)
				if got := m.NumCachedTokens(0, rejected); got > len(accepted)/4*4 {
					t.Errorf("%d tokens of the rejected draft hit the cache", got)
				}
			}
			// The sequence goes on: the next token is appended after the kept ones.
			if err := m.AppendTokens(1, span(400, 1)); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, m)
			if err := m.Free(1); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, m)
			if m.NumFreeBlocks() != 8 {
				t.Errorf("%d free blocks after Free, want 8", m.NumFreeBlocks())
			}
		})
	}
}

// TestAppendDraftErrors: a second draft before AcceptDraft, an unknown
// sequence and too few blocks change nothing.
func TestAppendDraftErrors(t *testing.T) {
	m := NewBlockManager(3, 4, true)
	mustAllocate(t, m, 1, span(0, 4))
	if err := m.AppendDraft(2, span(0, 1)); err == nil {
		t.Error("draft of an unknown sequence accepted")
	}
	if err := m.AppendDraft(1, span(10, 9)); err == nil {
		t.Error("a draft needing 3 blocks with 2 free accepted")
	}
	if err := m.AppendDraft(1, span(10, 2)); err != nil {
		t.Fatal(err)
	}
	if err := m.AppendDraft(1, span(20, 1)); err == nil {
		t.Error("a second pending draft accepted")
	}
	if got := m.DraftLen(1); got != 2 {
		t.Errorf("DraftLen %d, want 2", got)
	}
	table := slices.Clone(m.BlockTable(1))
	if err := m.Free(1); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, m)
	if m.NumFreeBlocks() != 3 || len(table) != 2 {
		t.Errorf("free %d of 3 after freeing a sequence with a draft (table %v)", m.NumFreeBlocks(), table)
	}
}
