package model

import (
	"testing"

	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/kv"
)

// TestMoEExpertsRun checks that a step runs each expert that some token
// routes to once, whatever the number of tokens routed to it, and no other:
// one token runs its top k experts of each layer and no more; a batch runs
// one FFN per distinct (layer, expert) pair of its routing, which the test
// recomputes from the router's top k of each token.
func TestMoEExpertsRun(t *testing.T) {
	m := loadSynthMoE(t, "qwen3moe-tiny")
	c := &m.Config
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: 4})
	if err != nil {
		t.Fatal(err)
	}
	table := []int32{0, 1, 2, 3}
	for _, tc := range []struct {
		name   string
		tokens []int32
	}{
		{"one token", []int32{7}},
		{"twelve tokens", []int32{1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState(c, 2)
			var b Batch
			b.BlockTables = [][]int32{table}
			for i, tok := range tc.tokens {
				b.Add(tok, int32(i), 0, i == len(tc.tokens)-1)
			}
			// The routing of every layer, from a first pass that keeps it.
			routed := make([]map[int32]bool, c.Layers)
			s.moe.onRoute = func(l int, sel []int32) {
				routed[l] = map[int32]bool{}
				for _, e := range sel {
					routed[l][e] = true
				}
			}
			logits := make([]float32, c.VocabSize)
			if err := m.Forward(s, &b, cache, logits); err != nil {
				t.Fatal(err)
			}
			want := 0
			for l := range routed {
				want += len(routed[l])
			}
			if len(tc.tokens) == 1 && want != c.Layers*c.ExpertsUsed {
				t.Fatalf("one token routed to %d experts in %d layers, want %d each", want, c.Layers, c.ExpertsUsed)
			}
			if want >= c.Layers*c.Experts {
				t.Fatalf("every expert routed to (%d runs): the test needs fewer tokens", want)
			}
			if s.moe.expertRuns != want {
				t.Errorf("%d expert FFNs run, want %d (one per routed (layer, expert))", s.moe.expertRuns, want)
			}
		})
	}
}

// loadSynthMoE writes the named test shape (Q8_0, stories260K's vocabulary,
// seed 1) with troupe synth and loads it.
func loadSynthMoE(t *testing.T, shape string) *Model {
	t.Helper()
	m, _, err := LoadGGUF(synthtest.Write(t, shape, "Q8_0", "stories260K.gguf", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestMoEConfigValidate checks that implausible expert counts are refused
// with an error.
func TestMoEConfigValidate(t *testing.T) {
	base := Config{Arch: "qwen3moe", Dim: 64, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 16, FFNDim: 96, VocabSize: 32,
		NormEps: 1e-6, RopeDim: 16, RopeBase: 1e6, RopeScale: 1, Experts: 8, ExpertsUsed: 2, ExpertFFNDim: 32}
	if err := base.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
	}{
		{"no experts", func(c *Config) { c.Experts = 0 }},
		{"more used than experts", func(c *Config) { c.ExpertsUsed = 9 }},
		{"none used", func(c *Config) { c.ExpertsUsed = 0 }},
		{"no expert width", func(c *Config) { c.ExpertFFNDim = 0 }},
		{"experts on a dense arch", func(c *Config) { c.Arch = "qwen3" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			if err := c.Validate(); err == nil {
				t.Errorf("%+v: no error", c)
			}
		})
	}
}
