package model

import (
	"math"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// TestMRopeTable: a text token's M-RoPE table, (p, p, p), is plain rope's
// at p bit for bit (so a qwen2vl model without images is qwen2's
// arithmetic); an image row's pairs take h and w where the sections say.
func TestMRopeTable(t *testing.T) {
	c := &Config{RopeBase: 1e6, RopeScale: 1, RopeSections: [4]int{8, 12, 12, 0}}
	got, want := make([]float32, 64), make([]float32, 64)
	for _, p := range []int32{0, 1, 7, 300, 40000} {
		c.mropeTable(got, [3]int32{p, p, p})
		compute.RopeTable(want, int(p), c.RopeBase, c.RopeScale, nil)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("position %d: value %d is %v, plain rope's %v", p, i, got[i], want[i])
			}
		}
	}
	c.mropeTable(got, [3]int32{5, 9, 13})
	for i := range 32 {
		p := 5
		switch {
		case i >= 8 && i < 20:
			p = 9
		case i >= 20:
			p = 13
		}
		compute.RopeTable(want, p, c.RopeBase, c.RopeScale, nil)
		if got[2*i] != want[2*i] || got[2*i+1] != want[2*i+1] {
			t.Fatalf("pair %d: (%v, %v), want position %d's (%v, %v)", i, got[2*i], got[2*i+1], p, want[2*i], want[2*i+1])
		}
	}
}

// TestBatchRopePositions: M-RoPE positions are refused by a model without
// rope sections, and must come one per token.
func TestBatchRopePositions(t *testing.T) {
	c := &Config{Arch: "llama", Dim: 8, VocabSize: 4}
	b := &Batch{BlockTables: [][]int32{{0}}}
	b.Add(1, 0, 0, true)
	b.RopePositions = [][3]int32{{0, 0, 0}}
	if err := b.Validate(c, 16, 1); err == nil {
		t.Error("M-RoPE positions on a model without rope sections: no error")
	}
	c.RopeSections = [4]int{1, 1, 1, 0}
	if err := b.Validate(c, 16, 1); err != nil {
		t.Error(err)
	}
	b.RopePositions = append(b.RopePositions, [3]int32{1, 1, 1})
	if err := b.Validate(c, 16, 1); err == nil {
		t.Error("two rope positions for one token: no error")
	}
}
