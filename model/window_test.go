package model

import "testing"

// TestKVWindow checks which configurations let a sequence's old blocks go:
// only those whose every layer has a window (archConfig writes 6 layers).
func TestKVWindow(t *testing.T) {
	for _, tc := range []struct {
		name, arch string
		keys       map[string]any
		window     int
	}{
		{"llama", "llama", nil, 0},
		{"gemma3 real pattern (a global layer in 6)", "gemma3", map[string]any{"attention.sliding_window": uint32(8)}, 0},
		{"gemma3 pattern 7 over 6 layers", "gemma3", map[string]any{"attention.sliding_window": uint32(8),
			"attention.sliding_window_pattern": uint32(7)}, 8},
		{"gemma3 pattern 0: every layer local", "gemma3", map[string]any{"attention.sliding_window": uint32(8),
			"attention.sliding_window_pattern": uint32(0)}, 8},
		{"gemma3 without window", "gemma3", nil, 0},
		{"gemma2 (every other layer global)", "gemma2", map[string]any{"attention.sliding_window": uint32(8)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := archConfig(t, tc.arch, tc.keys)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.KVWindow(); got != tc.window {
				t.Fatalf("KVWindow %d, want %d (layers %v)", got, tc.window, c.SWALayers)
			}
			// KVKeepFrom(p) is the first position the token at p attends to
			// in the forward pass (attendRange: max(0, p+1-window) when every
			// layer has one), so every layer's reads start at or after it.
			for p := range 40 {
				first := p
				for l := range c.Layers {
					j1 := 0
					if w := c.window(l); w > 0 {
						j1 = max(0, p+1-w)
					}
					first = min(first, j1)
				}
				if got := c.KVKeepFrom(p); got != first {
					t.Fatalf("KVKeepFrom(%d) = %d, the layers read from %d", p, got, first)
				}
			}
		})
	}
}

// TestValidateFreedBlocks: a batch may carry block tables whose leading
// blocks were freed behind the window (kv.NoBlock), as long as every token
// still finds the first position it attends to; a freed block elsewhere, or
// on a model with a global layer, is an error.
func TestValidateFreedBlocks(t *testing.T) {
	windowed := Config{VocabSize: 10, Layers: 2, SlidingWindow: 8, SWALayers: []bool{true, true}}
	global := windowed
	global.SWALayers = []bool{true, false}
	for _, tc := range []struct {
		name  string
		c     *Config
		table []int32
		pos   int32
		ok    bool
	}{
		{"nothing freed", &windowed, []int32{0, 1, 2, 3}, 13, true},
		{"freed behind the window", &windowed, []int32{-1, -1, 2, 3}, 15, true}, // attends from 8
		{"the window's first block freed", &windowed, []int32{-1, -1, 2, 3}, 14, false},
		{"a freed block after a live one", &windowed, []int32{-1, 1, -1, 3}, 15, false},
		{"a global layer", &global, []int32{-1, -1, 2, 3}, 15, false},
		{"a bad block", &windowed, []int32{-2, -1, 2, 3}, 15, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Batch{BlockTables: [][]int32{tc.table}}
			b.Add(1, tc.pos, 0, true)
			if err := b.Validate(tc.c, 4, 8); (err == nil) != tc.ok {
				t.Fatalf("Validate: %v, want ok %v", err, tc.ok)
			}
		})
	}
}
