package model

import "github.com/troupe-llm/troupe/kv"

// KVWindow is how many trailing positions every layer attends to (the
// token's own included): the sliding window when each layer has one (a
// Gemma 3 file with fewer layers than its sliding_window_pattern, or a
// pattern of 0; Mistral-style models), the widest if they differ, and 0 when
// some layer attends to every position (Gemma 2 and 3's global layers), so
// no position ever stops being needed.
func (c *Config) KVWindow() int {
	w := 0
	for l := range c.Layers {
		lw := c.window(l)
		if lw <= 0 {
			return 0
		}
		w = max(w, lw)
	}
	return w
}

// KVKeepFrom is the first position that the token at position pos attends
// to in any layer; for a sequence of n tokens, KVKeepFrom(n) is the first
// position any later token can attend to, and a block wholly before it is
// never read again (kv.BlockManager.FreeBefore). Within a step that
// computes positions n..n+k-1, the first token needs the most:
// KVKeepFrom(n).
func (c *Config) KVKeepFrom(pos int) int { return kv.WindowStart(pos, c.KVWindow()) }
