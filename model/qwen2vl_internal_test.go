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

// TestIMRopeTable: qwen3vl's interleaved table (ggml's IMROPE) with
// Qwen3-VL's sections 24, 20, 20 of 64 pairs: pair i takes t, h, w by
// i mod 3 while within 3× its section, else the fourth position (0), so
// a text token's pairs 61 and 62 are not rotated (not plain rope).
func TestIMRopeTable(t *testing.T) {
	c := &Config{RopeBase: 5e6, RopeScale: 1, RopeSections: [4]int{24, 20, 20, 0}, RopeInterleaved: true}
	got, want := make([]float32, 128), make([]float32, 128)
	c.mropeTable(got, [3]int32{5, 9, 13})
	for i := range 64 {
		p := 0
		switch {
		case i%3 == 1 && i < 60:
			p = 9
		case i%3 == 2 && i < 60:
			p = 13
		case i%3 == 0:
			p = 5
		}
		compute.RopeTable(want, p, c.RopeBase, c.RopeScale, nil)
		if got[2*i] != want[2*i] || got[2*i+1] != want[2*i+1] {
			t.Fatalf("pair %d: (%v, %v), want position %d's (%v, %v)", i, got[2*i], got[2*i+1], p, want[2*i], want[2*i+1])
		}
	}
	if got[2*61] != 1 || got[2*61+1] != 0 || got[2*62] != 1 || got[2*62+1] != 0 {
		t.Errorf("pairs 61, 62 of a row: %v, want unrotated", got[2*61:2*63])
	}
}

// TestDeepstackConfig: deepstack layers must be fewer than the layers;
// interleaved M-RoPE needs sections; an input embedding is InputDim wide.
func TestDeepstackConfig(t *testing.T) {
	base := Config{Arch: "qwen3vl", Dim: 8, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 4, FFNDim: 8, VocabSize: 4,
		NormEps: 1e-6, RopeDim: 4, RopeBase: 1e4, RopeScale: 1, RopeSections: [4]int{1, 1, 0, 0}, RopeInterleaved: true, Deepstack: 1}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
	}{
		{"deepstack = layers", func(c *Config) { c.Deepstack = 2 }},
		{"negative deepstack", func(c *Config) { c.Deepstack = -1 }},
		{"interleaved without sections", func(c *Config) { c.RopeSections = [4]int{} }},
	} {
		c := base
		tc.edit(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	b := &Batch{BlockTables: [][]int32{{0}}}
	b.Add(1, 0, 0, true)
	b.Embeds = [][]float32{make([]float32, 8)}
	if err := b.Validate(&base, 16, 1); err == nil {
		t.Error("an input row of Dim values on a deepstack model: no error")
	}
	b.Embeds[0] = make([]float32, 16)
	if err := b.Validate(&base, 16, 1); err != nil {
		t.Error(err)
	}
}
