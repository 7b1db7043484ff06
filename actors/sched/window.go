package sched

import (
	"fmt"

	"github.com/troupe-llm/troupe/kv"
)

// freeBehindWindow frees the blocks of running sequence q that no later step
// reads: those wholly before the window of its next position (Config.Window;
// nothing when 0). Done calls it once the step that computed q's positions
// up to NumComputed has run, so the device has read and written them.
func (s *Scheduler) freeBehindWindow(q *Seq) {
	if s.cfg.Window == 0 {
		return
	}
	if _, err := s.blocks.FreeBefore(q.ID, kv.WindowStart(q.NumComputed, s.cfg.Window)); err != nil {
		panic(fmt.Sprintf("sched: running seq %d: %v", q.ID, err)) // broken invariant
	}
}

// BlocksNeeded is the most device blocks a sequence that ends at maxLen
// positions (prompt and output) holds at once: its whole length (the last
// sampled token is never computed), or, when every layer has a window
// (Window), at most one window before a step's first token and one full
// step's tokens, at any alignment, and the block FreeBefore keeps before a
// window of 1. Add rejects a sequence that needs more than NumBlocks.
func (c Config) BlocksNeeded(maxLen int) int {
	c = c.WithDefaults()
	need := (maxLen - 1 + c.BlockSize - 1) / c.BlockSize
	if c.Window > 0 {
		need = min(need, (c.Window+c.MaxNumBatchedTokens+c.BlockSize-1)/c.BlockSize+1)
	}
	return need
}
