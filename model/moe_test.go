package model_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/model"
)

// moeModels are the mixture-of-experts files `troupe synth` writes for
// tests, with llama.cpp's references in testdata/reference/<name> (made by
// scripts/make-refs-moe.py, which lists the same shapes, types, vocabularies
// and seeds) and the bound of their teacher-forced logits.
var moeModels = []synthRef{
	{"synth-qwen3moe-tiny-Q8_0", "qwen3moe-tiny", "Q8_0", "stories260K.gguf", 1, 1e-4},
	{"synth-qwen2moe-tiny-Q8_0", "qwen2moe-tiny", "Q8_0", "stories260K.gguf", 1, 1e-4},
	{"synth-qwen3moe-tiny-MXFP4_MOE", "qwen3moe-tiny", "MXFP4_MOE", "stories260K.gguf", 1, 1e-4},
}

// TestMoEParity compares troupe's teacher-forced logits of the MoE test
// models with llama.cpp's on four prompts, and the greedy continuation
// where the reference's smallest top-1 lead is comfortable.
func TestMoEParity(t *testing.T) {
	for _, g := range moeModels {
		t.Run(g.name, func(t *testing.T) {
			m := synthModel(t, g.shape, g.typ, g.vocab, g.seed)
			checkCases(t, filepath.Join("testdata", "reference", g.name), g.bound, func(promptLen int, ids []int32) []float32 {
				return teacherForced(t, m, promptLen, ids)
			})
		})
	}
}

// TestMoEBatchInvariance runs the short cases of TestBatchInvariance on the
// MoE test models: the target stream decoded alone, prefilled in chunks
// among other sequences, and shuffled among 16 others (so that experts
// gather rows of many sequences), on 1 and 2 workers.
func TestMoEBatchInvariance(t *testing.T) {
	for _, g := range moeModels {
		t.Run(g.name, func(t *testing.T) {
			m := synthModel(t, g.shape, g.typ, g.vocab, g.seed)
			vocab, n := m.Config.VocabSize, invLenShort
			rng := rand.New(rand.NewPCG(1, g.seed))
			states := map[int]*model.State{1: model.NewState(&m.Config, 1), 2: model.NewState(&m.Config, 2)}
			gen := &invSeq{ids: randomTokens(rng, invPrompt, vocab), total: n, prompt: invPrompt, chunk: invPrompt}
			runInvariance(t, m, states[1], []*invSeq{gen}, false, 0)
			alone := &invSeq{ids: gen.ids, total: n, prompt: n, chunk: n}
			runInvariance(t, m, states[2], []*invSeq{alone}, false, 0)
			checkInvariance(t, []*invSeq{gen}, alone.rows, vocab)
			a, b := stream{ids: gen.ids, ref: alone.rows}, stream{ids: randomTokens(rng, n, vocab)}
			for ci, tc := range []invCase{
				{name: "chunk7", workers: 2, chunk: 7},
				{name: "mixed3-chunk7", workers: 2, chunk: 7, others: 3},
				{name: "mixed16-interleaved-workers1", workers: 1, prompt: 13, chunk: 5, others: 16, interleave: true},
			} {
				t.Run(tc.name, func(t *testing.T) { runInvCase(t, m, states, tc, uint64(ci), a, b, n) })
			}
		})
	}
}
