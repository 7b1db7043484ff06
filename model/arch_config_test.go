package model

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// archConfig writes a GGUF header of arch with 6 layers of dim 64, 4 heads
// (plus keys) and reads its Config.
func archConfig(t *testing.T, arch string, keys map[string]any, tensors ...string) (*Config, error) {
	t.Helper()
	w := gguf.NewWriter(3)
	w.SetKV("general.architecture", arch)
	for k, v := range map[string]any{"embedding_length": uint32(64), "block_count": uint32(6),
		"attention.head_count": uint32(4), "feed_forward_length": uint32(128)} {
		w.SetKV(arch+"."+k, v)
	}
	for k, v := range keys {
		w.SetKV(arch+"."+k, v)
	}
	for _, name := range append([]string{"token_embd.weight"}, tensors...) {
		if err := w.AddTensor(name, compute.F32, []int{8, 8}, make([]byte, 8*8*4)); err != nil {
			t.Fatal(err)
		}
	}
	f, err := gguf.Open(WriteTempGGUF(t, w))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return configFromGGUF(f)
}

// TestArchConfig checks the hyperparameters read for Gemma 2 and 3,
// SmolLM3 and Phi-3, with llama.cpp's defaults where a key is absent.
func TestArchConfig(t *testing.T) {
	hd16 := 1 / sqrtf(16)
	for _, tc := range []struct {
		name, arch string
		keys       map[string]any
		tensors    []string
		check      func(c *Config) bool
	}{
		{"gemma3 defaults", "gemma3", map[string]any{"attention.sliding_window": uint32(512), "rope.freq_base": float32(1e6)}, nil,
			func(c *Config) bool {
				return slices.Equal(c.SWALayers, []bool{true, true, true, true, true, false}) && c.SlidingWindow == 512 &&
					c.RopeBaseSWA == 10000 && c.RopeBase == 1e6 && c.RopeScaleSWA == 1 && c.QKNorm && c.PostNorms && c.GeGLU &&
					c.RopeNeox && c.EmbedScale == 8 && c.QueryScale == hd16 && c.AttnSoftcap == 0 && c.FinalSoftcap == 0
			}},
		{"gemma3 pattern and swa base", "gemma3", map[string]any{"attention.sliding_window": uint32(16),
			"attention.sliding_window_pattern": uint32(3), "rope.freq_base_swa": float32(5000)}, nil,
			func(c *Config) bool {
				return slices.Equal(c.SWALayers, []bool{true, true, false, true, true, false}) && c.RopeBaseSWA == 5000
			}},
		{"gemma3 without window", "gemma3", nil, nil, func(c *Config) bool { return c.SWALayers == nil && c.window(0) == 0 }},
		{"gemma2 defaults", "gemma2", map[string]any{"rope.freq_base": float32(20000)}, nil,
			func(c *Config) bool {
				return slices.Equal(c.SWALayers, []bool{true, false, true, false, true, false}) && c.SlidingWindow == 4096 &&
					c.AttnSoftcap == 50 && c.FinalSoftcap == 30 && c.RopeBaseSWA == 20000 && !c.QKNorm && !c.swaRope()
			}},
		{"gemma3 27B query scale", "gemma3", map[string]any{"block_count": uint32(62), "attention.key_length": uint32(8)}, nil,
			func(c *Config) bool { return c.QueryScale == 1/sqrtf(16) && c.HeadDim == 8 }},
		{"gemma2 27B query scale", "gemma2", map[string]any{"block_count": uint32(46), "attention.key_length": uint32(8)}, nil,
			func(c *Config) bool { return c.QueryScale == 1/sqrtf(16) && len(c.SWALayers) == 46 }},
		{"gemma2 not 27B", "gemma2", map[string]any{"block_count": uint32(62), "attention.key_length": uint32(8)}, nil,
			func(c *Config) bool { return c.QueryScale == 1/sqrtf(8) }},
		{"smollm3", "smollm3", nil, nil,
			func(c *Config) bool {
				return slices.Equal(c.NoRopeLayers, []bool{false, false, false, true, false, false}) && !c.RopeNeox
			}},
		{"phi3 longrope", "phi3", map[string]any{"rope.scaling.type": "longrope", "rope.scaling.attn_factor": float32(1.19)},
			[]string{"blk.0.attn_qkv.weight"},
			func(c *Config) bool {
				return c.FusedQKV && c.FusedGateUp && c.RopeAttnFactor == 1.19 && c.RopeNeox && c.QueryScale == hd16
			}},
		{"phi3 separate matrices", "phi3", nil, []string{"blk.0.ffn_gate.weight"},
			func(c *Config) bool { return !c.FusedQKV && !c.FusedGateUp && c.RopeAttnFactor == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := archConfig(t, tc.arch, tc.keys, tc.tensors...)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("config %+v", *c)
			}
		})
	}
}

// TestArchConfigErrors checks that bad Gemma and Phi-3 keys are errors
// that name them.
func TestArchConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, arch string
		keys       map[string]any
		want       string
	}{
		{"pattern not an integer", "gemma3", map[string]any{"attention.sliding_window": uint32(8), "attention.sliding_window_pattern": "six"},
			"gemma3.attention.sliding_window_pattern is not a non-negative integer"},
		{"negative swa base", "gemma3", map[string]any{"attention.sliding_window": uint32(8), "rope.freq_base_swa": float32(-1)},
			"sliding-window rope base"},
		{"infinite swa base", "gemma3", map[string]any{"attention.sliding_window": uint32(8), "rope.freq_base_swa": float32(math.Inf(1))},
			"sliding-window rope base +Inf and scale 1 must be positive and finite"},
		{"infinite rms eps", "llama", map[string]any{"attention.layer_norm_rms_epsilon": float32(math.Inf(1))}, "norm eps +Inf"},
		{"nan rms eps", "llama", map[string]any{"attention.layer_norm_rms_epsilon": float32(math.NaN())}, "norm eps NaN"},
		{"infinite rope base", "llama", map[string]any{"rope.freq_base": float32(math.Inf(1))}, "rope base +Inf"},
		{"nan rope base", "llama", map[string]any{"rope.freq_base": float32(math.NaN())}, "rope base NaN"},
		{"zero rope base", "llama", map[string]any{"rope.freq_base": float32(0)}, "must be positive and finite"},
		{"negative cap", "gemma2", map[string]any{"attn_logit_softcapping": float32(-50)}, "negative soft-cap"},
		{"yarn on phi3", "phi3", map[string]any{"rope.scaling.type": "yarn"}, `rope scaling "yarn"`},
		{"longrope elsewhere", "gemma3", map[string]any{"rope.scaling.type": "longrope"}, `rope scaling "longrope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := archConfig(t, tc.arch, tc.keys)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestNextBlock checks nextBlock's walk over a window that starts inside
// a cache block.
func TestNextBlock(t *testing.T) {
	var got []int
	for j := 5; j < 40; j = nextBlock(j, 16) {
		got = append(got, j)
	}
	if !slices.Equal(got, []int{5, 16, 32}) {
		t.Errorf("walk %v", got)
	}
	if s := sqrtf(2); math.Float32bits(s) != math.Float32bits(float32(math.Sqrt2)) {
		t.Errorf("sqrtf(2) = %g", s)
	}
}
