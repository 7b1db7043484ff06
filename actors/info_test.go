package actors_test

import (
	"testing"

	"github.com/troupe-llm/troupe/actors"
)

// TestInfo: Runtime.Info describes TinyStories-656K (MANIFEST.md) as its
// file does: the shapes, the 656K parameters of its tied dense transformer,
// its Q8_0 weights, its BOS; FIMTokens copies the vocabulary's (none).
func TestInfo(t *testing.T) {
	m := openModel(t, "TinyStories-656K-Q8_0.gguf")
	rt := start(t, m, actors.Config{})
	got := rt.Info()
	want := actors.ModelInfo{Path: m.Path, Arch: "llama", Dim: 128, Layers: 2, Heads: 8, KVHeads: 4, HeadDim: 16, FFNDim: 384,
		VocabSize: 2048, ContextLen: 512, NormEps: m.Config.NormEps, RopeDim: 16, RopeBase: m.Config.RopeBase,
		Params: 656000, WeightType: "Q8_0", BOS: 1}
	if got != want {
		t.Errorf("Info() = %+v\nwant %+v", got, want)
	}
	if m.Config.NormEps != 1e-6 {
		t.Errorf("NormEps %g, want 1e-6", m.Config.NormEps)
	}
	if fim := rt.FIMTokens(); fim.Infill() || fim != actors.FIMTokens(m.Tokenizer.Vocab().FIM) {
		t.Errorf("FIMTokens() = %+v, want the vocabulary's %+v (no infill)", fim, m.Tokenizer.Vocab().FIM)
	}
}
