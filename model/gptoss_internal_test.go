package model

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// gptossKeys are a gpt-oss header's keys: 6 layers of dim 64, 4 heads of
// 16, window 8, 8 experts, YaRN (factor f over 4096, base 150000).
func gptossKeys(factor float32) map[string]any {
	return map[string]any{"attention.sliding_window": uint32(8), "attention.key_length": uint32(16),
		"expert_count": uint32(8), "expert_used_count": uint32(4), "expert_feed_forward_length": uint32(32),
		"rope.freq_base": float32(150000), "rope.scaling.type": "yarn", "rope.scaling.factor": factor,
		"rope.scaling.original_context_length": uint32(4096)}
}

// TestGptOssConfig checks the hyperparameters read for gpt-oss, with
// llama.cpp's defaults where a key is absent.
func TestGptOssConfig(t *testing.T) {
	c, err := archConfig(t, "gpt-oss", gptossKeys(32))
	if err != nil {
		t.Fatal(err)
	}
	y := c.RopeYaRN
	switch {
	case !c.QKVBias || !c.OBias || !c.AttnSinks || !c.SoftmaxTopK || !c.ExpertOAI || c.NormTopK || !c.RopeNeox:
		t.Errorf("flags %+v", *c)
	case !slices.Equal(c.SWALayers, []bool{true, false, true, false, true, false}) || c.window(0) != 8 || c.window(1) != 0:
		t.Errorf("sliding-window layers %v, window %d", c.SWALayers, c.SlidingWindow)
	case c.RopeScale != 1.0/32 || c.RopeScaleSWA != c.RopeScale || c.RopeBaseSWA != 150000 || c.swaRope():
		t.Errorf("rope scale %g/%g, swa base %g", c.RopeScale, c.RopeScaleSWA, c.RopeBaseSWA)
	case y == nil || *y != YaRN{OrigCtx: 4096, ExtFactor: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}:
		t.Errorf("YaRN %+v", y)
	case c.Experts != 8 || c.ExpertsUsed != 4 || c.ExpertFFNDim != 32 || c.HeadDim != 16:
		t.Errorf("experts %d/%d of %d, head dim %d", c.ExpertsUsed, c.Experts, c.ExpertFFNDim, c.HeadDim)
	}
	keys := gptossKeys(32)
	delete(keys, "attention.sliding_window")
	if _, err := archConfig(t, "gpt-oss", keys); err == nil || !strings.Contains(err.Error(), "gpt-oss.attention.sliding_window") {
		t.Errorf("without a window: error %v", err)
	}
}

// TestYaRNTable checks YaRN rope tables against ggml's rope_yarn and
// ggml_rope_yarn_corr_dims compiled as llama.cpp b10573 builds them (gcc
// 12, -O3 -march=native for ggml-cpu, without -march for ggml-base and
// llama; values printed by a C copy of those functions), with the
// attn_factor llama.cpp's context computes: factor 32 (gpt-oss: corr dims
// 8 and 18) and factor 4 with base 10000 (corr dims 10 and 23, magnitude
// 1 + 0.1·ln 4).
func TestYaRNTable(t *testing.T) {
	for _, tc := range []struct {
		factor, base float32
		pos          int
		want         map[int][2]uint32 // pair: cos, sin bits
	}{
		{32, 150000, 100, map[int][2]uint32{0: {0x3f94a169, 0xbf2e8e49}, 7: {0x3f1f0a71, 0x3f98ebe3}, 9: {0xbfac5345, 0xbce1eced},
			13: {0x3f9e48e2, 0x3f087251}, 18: {0x3fac5c33, 0x3ba9090b}, 19: {0x3fac5c5f, 0x3b68f22a}, 31: {0x3fac5c86, 0x382ac416}}},
		{4, 10000, 7, map[int][2]uint32{0: {0x3f5bc11b, 0x3f3f8124}, 1: {0x3f1514f8, 0xbf7a7b05}, 8: {0x3f5ef175, 0x3f3bc84e},
			9: {0x3f7c3e4d, 0x3f121457}, 10: {0x3f869913, 0x3edf9a2b}}},
	} {
		keys := gptossKeys(tc.factor)
		keys["rope.freq_base"] = tc.base
		keys["attention.key_length"] = uint32(64)
		c, err := archConfig(t, "gpt-oss", keys)
		if err != nil {
			t.Fatal(err)
		}
		cs := make([]float32, 64)
		c.ropeTable(cs, tc.pos, c.RopeBase, c.RopeScale)
		for i, w := range tc.want {
			if got := [2]uint32{math.Float32bits(cs[2*i]), math.Float32bits(cs[2*i+1])}; got != w {
				t.Errorf("factor %g pos %d pair %d: %08x, ggml %08x", tc.factor, tc.pos, i, got, w)
			}
		}
	}
}

// TestAttnSink checks that attnSink turns an online softmax's state into
// the attention output of the positions and the sink together:
// Σ e^(s_j)·v_j / (Σ e^(s_j) + e^sink), on both of its branches (a sink
// above and below the scores' max).
func TestAttnSink(t *testing.T) {
	scores := []float32{0.5, -1, 2, 0.25}
	vals := [][]float32{{1, 2}, {-3, 0.5}, {0.25, 4}, {2, -1}}
	for _, sink := range []float32{-0.5, 1.5, 3, 7} {
		// The online softmax's state: the max M, the sum S of e^(s−M), the
		// weighted values.
		M := float32(math.Inf(-1))
		for _, s := range scores {
			M = max(M, s)
		}
		var S float32
		out := make([]float32, 2)
		var want [2]float64
		den := math.Exp(float64(sink))
		for j, s := range scores {
			e := compute.Expf(s - M)
			S += e
			for d := range out {
				out[d] += e * vals[j][d]
				want[d] += math.Exp(float64(s)) * float64(vals[j][d])
			}
			den += math.Exp(float64(s))
		}
		S = attnSink(out, S, M, sink)
		for d := range out {
			if got, w := float64(out[d]/S), want[d]/den; math.Abs(got-w) > 1e-6*math.Max(1, math.Abs(w)) {
				t.Errorf("sink %g: output %d = %g, want %g", sink, d, got, w)
			}
		}
	}
}

// TestAttnSinkRounding pins the sum's two roundings (S·ms, then + 1),
// which llama.cpp's prompt rows of gpt-oss-20b-l4 need: a fused
// multiply-add gives 0x4011e7e9 here.
func TestAttnSinkRounding(t *testing.T) {
	S := math.Float32frombits(0x40070a3e) // 2.11
	if got := math.Float32bits(attnSink(make([]float32, 2), S, 0, 0.5)); got != 0x4011e7ea {
		t.Errorf("S = %#08x, want 0x4011e7ea", got)
	}
}

// TestSwiGLUOAI checks swiglu_oai against its formula in float64, inside
// and beyond the limit of 7 (gate clamped from above only, up both ways).
func TestSwiGLUOAI(t *testing.T) {
	gate := []float32{-10, -1, 0, 0.5, 3, 7, 12}
	up := []float32{9, -9, 1, -0.5, 2, -7.5, 0.25}
	want := make([]float64, len(gate))
	for i := range gate {
		x := math.Min(float64(gate[i]), 7)
		y := math.Max(-7, math.Min(float64(up[i]), 7))
		want[i] = x / (1 + math.Exp(-1.702*x)) * (y + 1)
	}
	swigluOAI(gate, up)
	for i, w := range want {
		if math.Abs(float64(gate[i])-w) > 1e-6*math.Max(1, math.Abs(w)) {
			t.Errorf("%d: %g, want %g", i, gate[i], w)
		}
	}
}
