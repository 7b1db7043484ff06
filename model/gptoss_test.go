package model_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// gptossTiny is the gpt-oss test model: `troupe synth --shape gpt-oss-tiny
// --type Q8_0 --seed 1` with the stories260K vocabulary, whose llama.cpp
// references scripts/make-refs.py made.
const gptossTiny = "synth-gpt-oss-tiny-Q8_0"

func gptossModel(t *testing.T) *model.Model {
	return synthModel(t, "gpt-oss-tiny", "Q8_0", "stories260K.gguf", 1)
}

// TestGptOssParity compares troupe's teacher-forced logits of gpt-oss-tiny
// with llama.cpp's on four prompts, with an F16 and a Q8_0 KV cache, at
// TestSynthParity's bound, and the greedy continuation where the lead is
// comfortable. Each case runs 52 to 61 positions, past the window of 16.
// The router is F32, which llama.cpp multiplies in one order for the
// prompt (llamafile's sgemm) and in another for a decode step of one token
// (ggml_vec_dot_f32): State.MatchGGMLBatching follows it. (Without it,
// the router logits differ in their last bits at decode steps, which case
// 0 with a Q8_0 cache turns into a 0.4% change in its last row.)
func TestGptOssParity(t *testing.T) {
	m := gptossModel(t)
	refParity(t, m, gptossTiny, 1e-4, true)
}

// TestGptOssBatchInvariance runs all of TestBatchInvariance's cases on
// gpt-oss-tiny: streams of 40 tokens, past its window of 16, with experts
// gathering the rows of many sequences.
func TestGptOssBatchInvariance(t *testing.T) {
	batchInvariance(t, gptossModel(t), 1, true)
}

// TestGptOssParts checks that each of gpt-oss's parts changes the logits,
// so that the parity test above guards them: without the sinks, without
// YaRN (its magnitude scaling included), or without the biases every row
// moves; without the sliding window only the rows past it (position ≥ 16)
// move.
func TestGptOssParts(t *testing.T) {
	m := gptossModel(t)
	rc := testmodels.CasesIn(t, filepath.Join("testdata", "reference", gptossTiny))[1]
	ids := append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...)
	base := teacherForcedKV(t, m, kv.F16, len(rc.PromptIDs), ids, false)
	nv, window := m.Config.VocabSize, m.Config.SlidingWindow
	for _, tc := range []struct {
		name  string
		drop  func(m *model.Model) func() // removes the part, returns its undo
		first int                         // the first row that must move
	}{
		{"sinks", func(m *model.Model) func() {
			saved := make([][]float32, len(m.Weights.Layers))
			for l := range m.Weights.Layers {
				saved[l], m.Weights.Layers[l].Sinks = m.Weights.Layers[l].Sinks, nil
			}
			return func() {
				for l := range saved {
					m.Weights.Layers[l].Sinks = saved[l]
				}
			}
		}, 0},
		{"sliding window", func(m *model.Model) func() {
			saved := m.Config.SWALayers
			m.Config.SWALayers = nil
			return func() { m.Config.SWALayers = saved }
		}, window},
		{"yarn", func(m *model.Model) func() {
			saved := m.Config.RopeYaRN
			m.Config.RopeYaRN = nil
			return func() { m.Config.RopeYaRN = saved }
		}, 0}, // its magnitude scaling moves position 0 too
		{"output and expert biases", func(m *model.Model) func() {
			lw := &m.Weights.Layers[0]
			ob, db := lw.OBias, lw.MoE.DownBias
			lw.OBias, lw.MoE.DownBias = make([]float32, len(ob)), make([]float32, len(db))
			return func() { lw.OBias, lw.MoE.DownBias = ob, db }
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			undo := tc.drop(m)
			got := teacherForcedKV(t, m, kv.F16, len(rc.PromptIDs), ids, false)
			undo()
			for r := range rc.LogitRows {
				d := 0.0
				for j := range nv {
					d = math.Max(d, math.Abs(float64(got[r*nv+j]-base[r*nv+j])))
				}
				switch {
				case r < tc.first && d != 0:
					t.Errorf("row %d moved by %g, before row %d", r, d, tc.first)
				case r >= tc.first && d < 1e-4:
					t.Errorf("row %d moved by only %g", r, d)
				}
			}
		})
	}
}
