package sched

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

// op is one move of a trace case.
type op func(h *harness)

// toks returns the n tokens start, start+1, ...
func toks(start, n int) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(start + i)
	}
	return t
}

// add enters a sequence; a rejection is traced.
func add(name string, prompt []int32, maxTokens, priority int) op {
	return func(h *harness) {
		h.t.Helper()
		if _, err := h.add(name, prompt, maxTokens, priority); err != nil {
			switch {
			case errors.Is(err, ErrNeverFits):
				h.logf("add %s: never fits", name)
			case errors.Is(err, kv.ErrSeqExists):
				h.logf("add %s: exists", name)
			default:
				h.t.Fatalf("add %s: %v", name, err)
			}
		}
		h.check()
	}
}

// steps runs n steps: Schedule, the device, Done.
func steps(n int) op {
	return func(h *harness) {
		h.t.Helper()
		for range n {
			if h.schedule() {
				h.done()
			}
		}
	}
}

func schedule() op { return func(h *harness) { h.schedule() } }
func done() op     { return func(h *harness) { h.done() } }
func fail() op     { return func(h *harness) { h.fail() } }

// cancel finishes sequences and traces their state and the free blocks
// after.
func cancel(names ...string) op {
	return func(h *harness) {
		h.t.Helper()
		for _, n := range names {
			q := h.seq(n)
			st := q.Status.String()
			if h.plan != nil && slices.ContainsFunc(h.plan.Chunks, func(c Chunk) bool { return c.Seq == q }) {
				st += ", in flight"
			}
			if !h.s.Finish(q.ID) || h.s.Finish(q.ID) {
				h.t.Fatalf("Finish(%s) twice: true, false wanted", n)
			}
			h.logf("cancel %s(%s): free %d host %d", n, st, h.s.blocks.NumFreeBlocks(), h.s.host.NumFree())
			h.check()
		}
	}
}

func ready(names ...string) op {
	return func(h *harness) {
		for _, n := range names {
			h.s.Ready(h.seq(n).ID)
		}
	}
}

// tables traces the block tables of sequences.
func tables(names ...string) op {
	return func(h *harness) {
		var b strings.Builder
		b.WriteString("tables")
		for _, n := range names {
			fmt.Fprintf(&b, " %s=%v", n, h.s.BlockTable(h.seq(n)))
		}
		h.logf("%s", b.String())
	}
}

func trigger() op {
	return func(h *harness) {
		fire, pending := h.s.Trigger()
		h.logf("trigger fire=%v pending=%v", fire, pending)
	}
}

// cached traces what the prefix cache holds for tokens, and the sequences'
// NumCachedTokens.
func cached(tokens []int32, names ...string) op {
	return func(h *harness) {
		var b strings.Builder
		fmt.Fprintf(&b, "cached %d", h.s.NumCachedTokens(0, tokens))
		for _, n := range names {
			fmt.Fprintf(&b, " %s=%d", n, h.seq(n).NumCachedTokens)
		}
		h.logf("%s", b.String())
	}
}

func stats() op {
	return func(h *harness) {
		var st messages.Stats
		h.s.Stats(&st)
		h.logf("stats run=%d wait=%d swapped=%d free=%d/%d queries=%d hits=%d preempt=%d out=%d in=%d rejected=%d host=%d/%d",
			st.Running, st.Waiting, st.Swapped, st.NumFreeBlocks, st.NumBlocks, st.PrefixQueries, st.PrefixHits,
			st.Preemptions, st.SwapOuts, st.SwapIns, st.Rejected, st.FreeHostBlocks, st.HostBlocks)
	}
}

// state traces the status, readiness and outputs of sequences.
func state(names ...string) op {
	return func(h *harness) {
		var b strings.Builder
		b.WriteString("state")
		for _, n := range names {
			q := h.seq(n)
			r := ""
			if q.Ready {
				r = ",ready"
			}
			fmt.Fprintf(&b, " %s=%v%s%v", n, q.Status, r, q.Tokens[q.PromptLen:])
		}
		h.logf("%s", b.String())
	}
}

func TestConfig(t *testing.T) {
	ok := Config{MaxModelLen: 64, NumBlocks: 8}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if d := ok.WithDefaults(); d.MaxNumSeqs != 64 || d.MaxNumBatchedTokens != 512 || d.BlockSize != 16 {
		t.Errorf("defaults %+v", d)
	}
	for _, c := range []Config{
		{MaxModelLen: 1, NumBlocks: 8},
		{MaxModelLen: 64},
		{MaxModelLen: 64, NumBlocks: 8, MaxNumSeqs: -1},
		{MaxModelLen: 64, NumBlocks: 8, MaxNumBatchedTokens: -1},
		{MaxModelLen: 64, NumBlocks: 8, BlockSize: -1},
		{MaxModelLen: 64, NumBlocks: 8, NumHostBlocks: -1},
		{MaxModelLen: 64, NumBlocks: 8, Preemption: 2},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

// TestSpansStayWhole: a chunk ends before a span it would cut, or takes
// nothing when it starts in one it cannot finish; a span longer than the
// budget is cut as any tokens.
func TestSpansStayWhole(t *testing.T) {
	q := &Seq{Spans: [][2]int{{5, 16}, {20, 60}}}
	for _, tc := range []struct{ start, end, max, want int }{
		{0, 12, 12, 5},   // cut before the first span
		{5, 17, 12, 17},  // the first span whole
		{7, 12, 12, 7},   // starts inside it (a prefix hit) and cannot finish: nothing
		{16, 25, 12, 25}, // the second span is longer than the budget: cut as tokens
		{0, 4, 12, 4},    // before every span
	} {
		if got := q.cut(tc.start, tc.end, tc.max); got != tc.want {
			t.Errorf("cut(%d, %d, %d) = %d, want %d", tc.start, tc.end, tc.max, got, tc.want)
		}
	}
}
