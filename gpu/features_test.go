package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
)

// loadSynth writes the synthetic shape as Q8_0 and loads it on the host.
func loadSynth(t *testing.T, shape string) *model.Model {
	t.Helper()
	m, _, err := model.LoadGGUF(synthtest.Write(t, shape, "Q8_0", "stories260K.gguf", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestLoadRefusesFeatures: a model with features the CUDA forward pass does
// not implement fails to load, before any device work, with an error naming
// each of them, as the runtime then reports: gpt-oss (experts, attention
// sinks, biases, YaRN, windows) and gemma2 (post norms, soft-caps, windows,
// GeGLU, scaled embeddings and queries).
func TestLoadRefusesFeatures(t *testing.T) {
	for _, tc := range []struct {
		shape string
		want  []string
	}{
		{"gpt-oss-tiny", []string{"moe", "attn-sinks", "o-bias", "yarn", "sliding-window", "moe-oai", "CPU only"}},
		{"gemma2-tiny", []string{"post-norms", "attn-softcap", "final-softcap", "sliding-window", "geglu", "embed-scale", "query-scale"}},
	} {
		m := loadSynth(t, tc.shape)
		g, err := Load(m, nil, Config{NumBlocks: 4, BlockSize: 16})
		if err == nil {
			g.Close()
			t.Fatalf("%s: Load accepted it", tc.shape)
		}
		t.Logf("%s: %v", tc.shape, err)
		if !errors.Is(err, model.ErrUnsupportedFeature) {
			t.Errorf("%s: error %q does not wrap ErrUnsupportedFeature", tc.shape, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.shape, err, w)
			}
		}
	}
}

// TestLoadRefusesUndeclaredFeature: a feature the CUDA forward pass does not
// declare (one a new family might add) is refused by name, even on a llama
// it otherwise runs.
func TestLoadRefusesUndeclaredFeature(t *testing.T) {
	m, _, err := model.LoadGGUF(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := model.CheckFeatures("CUDA", Features, m); err != nil {
		t.Fatalf("stories260K: %v", err)
	}
	m.Features |= 1 << 63
	if g, err := Load(m, nil, Config{NumBlocks: 4, BlockSize: 16}); err == nil {
		g.Close()
		t.Fatal("Load accepted a feature it does not declare")
	} else if !errors.Is(err, model.ErrUnsupportedFeature) || !strings.Contains(err.Error(), "feature-63") {
		t.Fatalf("error %q does not name feature-63", err)
	}
}
