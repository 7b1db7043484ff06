package model_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// TestSplitStages checks the byte-balanced split: contiguous, every layer
// once, at least one layer a stage, the largest stage as small as any cut
// allows (checked by trying every cut of small cases), and a clear error for
// more stages than layers.
func TestSplitStages(t *testing.T) {
	for _, tc := range []struct {
		layers       []int64
		first, last  int64
		n            int
		wantMaxBytes int64
	}{
		{[]int64{10, 10, 10, 10}, 0, 0, 2, 20},
		{[]int64{10, 10, 10, 10}, 25, 0, 2, 35}, // the embedding weighs on the first stage: [0, 1) and [1, 4)
		{[]int64{10, 10, 10, 10}, 0, 25, 3, 35},
		{[]int64{1, 1, 1, 1, 1, 1, 1, 1, 1}, 0, 0, 3, 3},
		{[]int64{5, 1, 1, 1, 5}, 0, 0, 3, 5},
		{[]int64{7}, 3, 3, 1, 13},
	} {
		t.Run(fmt.Sprint(tc.layers, tc.first, tc.last, tc.n), func(t *testing.T) {
			st, err := model.SplitStages(tc.layers, tc.first, tc.last, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if len(st) != tc.n || st[0].Lo != 0 || st[len(st)-1].Hi != len(tc.layers) {
				t.Fatalf("stages %v", st)
			}
			var worst int64
			for i, s := range st {
				if s.Hi <= s.Lo || i > 0 && s.Lo != st[i-1].Hi {
					t.Fatalf("stages %v: not contiguous and non-empty", st)
				}
				var b int64
				for l := s.Lo; l < s.Hi; l++ {
					b += tc.layers[l]
				}
				if s.Lo == 0 {
					b += tc.first
				}
				if s.Hi == len(tc.layers) {
					b += tc.last
				}
				worst = max(worst, b)
			}
			if worst != tc.wantMaxBytes {
				t.Errorf("stages %v: largest %d bytes, want %d", st, worst, tc.wantMaxBytes)
			}
		})
	}
	if _, err := model.SplitStages([]int64{1, 2}, 0, 0, 3); err == nil || !strings.Contains(err.Error(), "3 pipeline stages for a model of 2 layers") {
		t.Errorf("3 stages of 2 layers: %v", err)
	}
	if _, err := model.PlanStages(testmodels.Path(t, "stories260K.gguf"), 99); err == nil {
		t.Error("99 stages of stories260K: no error")
	}
	m, err := model.OpenWith(testmodels.Path(t, "stories260K.gguf"), model.LoadOptions{Stage: model.Stage{Lo: 2, Hi: 99}})
	if err == nil {
		m.Close()
		t.Error("a stage past the last layer loaded")
	}
}

// TestStageExactness runs models split into 2 and 3 pipeline stages (each
// stage loaded from the file alone, with a KV cache of its own layers)
// beside the whole model, over the same batches (three sequences prefilled
// in chunks and decoded, mixed, and a fourth hitting a prefix in its
// owner's step), each step cut into micro-batches that flow through the
// stages as a pipeline runs them (runPipelined), and requires every logit
// to be the whole model's bit for bit: a dense model (stories260K), one with sliding-window
// layers and their own rope (gemma3-tiny), and a mixture of experts with
// sinks and a window (gpt-oss-tiny).
func TestStageExactness(t *testing.T) {
	for _, tc := range []struct{ name, shape string }{
		{"stories260K", ""},
		{"gemma3-tiny", "gemma3-tiny"},
		{"gpt-oss-tiny", "gpt-oss-tiny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testmodels.Path(t, "stories260K.gguf")
			if tc.shape != "" {
				path = synthtest.Write(t, tc.shape, "Q8_0", "stories260K.gguf", 1)
			}
			whole, err := model.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer whole.Close()
			for _, n := range []int{2, 3} {
				t.Run(fmt.Sprintf("stages%d", n), func(t *testing.T) {
					stageExactness(t, whole, path, n)
				})
			}
		})
	}
}

func stageExactness(t *testing.T, whole *model.Model, path string, n int) {
	c := &whole.Config
	plan, err := model.PlanStages(path, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d layers in %d stages: %v", c.Layers, n, plan)
	const numBlocks, blockSize = 64, 16
	wholeCache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), BlockSize: blockSize, NumBlocks: numBlocks})
	if err != nil {
		t.Fatal(err)
	}
	stages := make([]*model.Model, n)
	caches := make([]*kv.Cache, n)
	states := make([]*model.State, n)
	for i, st := range plan {
		m, err := model.OpenWith(path, model.LoadOptions{Stage: st})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		checkStageWeights(t, m, st)
		if caches[i], err = m.NewStageCache(kv.F16, numBlocks, blockSize); err != nil {
			t.Fatal(err)
		}
		stages[i], states[i] = m, model.NewState(&m.Config, 2)
		if err := m.Forward(states[i], &model.Batch{}, caches[i], nil); err != model.ErrStage {
			t.Errorf("Forward on a stage: %v, want ErrStage", err)
		}
	}
	ws := model.NewState(c, 2)
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	// Three sequences: prompts of 9, 20 and 5 tokens prefilled in chunks
	// of up to 7 beside the others' decode steps, 30 tokens each; and a
	// fourth, first in the batch, that hits the second's first block in
	// the step that writes its end (a prefix hit in its owner's step).
	type seq struct {
		prompt, total, done int
		table               []int32
		after               *seq // joins in the step where after writes its first block's end
	}
	seqs := []*seq{{prompt: 9, total: 30}, {prompt: 20, total: 30}, {prompt: 5, total: 30}}
	for i, s := range seqs {
		for b := range 2 {
			s.table = append(s.table, int32(i*2+b))
		}
	}
	hitter := &seq{prompt: 20, total: 30, done: blockSize, table: []int32{seqs[1].table[0], 6}, after: seqs[1]}
	seqs = append([]*seq{hitter}, seqs...)
	prompts := map[*seq][]int32{}
	token := func(s *seq) int32 {
		for len(prompts[s]) <= s.done {
			prompts[s] = append(prompts[s], int32(rng.IntN(c.VocabSize)))
		}
		return prompts[s][s.done]
	}
	for step := 0; ; step++ {
		b := &model.Batch{}
		for _, s := range seqs {
			if s.after != nil && s.after.done < blockSize-2 { // it writes 14 and 15 in the step the hitter joins
				continue
			}
			if s.after != nil && len(prompts[s]) == 0 {
				prompts[s] = prompts[s.after][:blockSize:blockSize] // the shared prefix
			}
			si := int32(len(b.BlockTables))
			b.BlockTables = append(b.BlockTables, s.table)
			take := 1
			if s.done < s.prompt {
				take = min(7, s.prompt-s.done)
			}
			for range min(take, s.total-s.done) {
				b.Add(token(s), int32(s.done), si, true)
				s.done++
			}
		}
		if len(b.Tokens) == 0 {
			break
		}
		rows := len(b.Tokens)
		want := make([]float32, rows*c.VocabSize)
		if err := whole.Forward(ws, b, wholeCache, want); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, rows*c.VocabSize)
		runPipelined(t, stages, states, caches, b, n, blockSize, got)
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
				t.Fatalf("step %d: logit %d (row %d): whole %v, %d stages %v", step, i, i/c.VocabSize, want[i], n, got[i])
			}
		}
	}
}

// runPipelined runs b through the stages as a pipeline does: cut into
// micro-batches (model.SplitBatch, as many as stages), each stage taking
// them in order, stage i on micro-batch j in the round after stage i-1 ran
// it (the order of GPipe's fill: any order with both holds gives the same).
func runPipelined(t *testing.T, stages []*model.Model, states []*model.State, caches []*kv.Cache, b *model.Batch, parts, blockSize int, logits []float32) {
	t.Helper()
	c := &stages[0].Config
	mbs := model.SplitBatch(b, parts, blockSize)
	hidden := make([][]float32, len(mbs)) // each micro-batch's rows between stages
	for j, mb := range mbs {
		hidden[j] = make([]float32, (mb.Hi-mb.Lo)*c.Dim)
	}
	for round := range len(mbs) + len(stages) - 1 {
		for i := len(stages) - 1; i >= 0; i-- {
			j := round - i
			if j < 0 || j >= len(mbs) {
				continue
			}
			mb := mbs[j]
			out := make([]float32, len(hidden[j]))
			if err := stages[i].ForwardStage(states[i], &mb.Batch, caches[i], hidden[j], out, logits[mb.LogitLo*c.VocabSize:]); err != nil {
				t.Fatalf("stage %d, micro-batch %d of %d: %v", i, j, len(mbs), err)
			}
			hidden[j] = out
		}
	}
}

// TestSplitBatch checks the cuts: whole sequences, balanced by rows, a
// reader of a block written in the same step never before its writer,
// and a batch that cannot be cut left whole.
func TestSplitBatch(t *testing.T) {
	const bs = 4
	batch := func(seqs []int32, pos []int32, tables [][]int32) *model.Batch {
		b := &model.Batch{BlockTables: tables}
		for i, s := range seqs {
			b.Add(int32(i), pos[i], s, i%2 == 0)
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		b      *model.Batch
		parts  int
		bounds []int // micro-batches' Hi
	}{
		{"decode", batch([]int32{0, 1, 2, 3}, []int32{5, 5, 5, 5}, [][]int32{{0, 1}, {2, 3}, {4, 5}, {6, 7}}), 2, []int{2, 4}},
		{"three of four", batch([]int32{0, 1, 2, 3}, []int32{5, 5, 5, 5}, [][]int32{{0, 1}, {2, 3}, {4, 5}, {6, 7}}), 3, []int{1, 2, 4}},
		{"sequences whole", batch([]int32{0, 0, 0, 1}, []int32{0, 1, 2, 5}, [][]int32{{0}, {2, 3}}), 2, []int{3, 4}},
		{"one sequence", batch([]int32{0, 0, 0}, []int32{0, 1, 2}, [][]int32{{0}}), 3, []int{3}},
		// Sequence 0 reads block 4, which sequence 1 writes (row 1): together.
		{"reader before writer", batch([]int32{0, 1, 2}, []int32{5, 2, 5}, [][]int32{{4, 1}, {4}, {6, 7}}), 3, []int{2, 3}},
		// Sequence 1 reads block 0, written by sequence 0 before it: a cut.
		{"writer before reader", batch([]int32{0, 1}, []int32{2, 5}, [][]int32{{0}, {0, 1}}), 2, []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mbs := model.SplitBatch(tc.b, tc.parts, bs)
			var his []int
			lo, logits := 0, 0
			for _, mb := range mbs {
				his = append(his, mb.Hi)
				if mb.Lo != lo || mb.LogitLo != logits || len(mb.Batch.Tokens) != mb.Hi-mb.Lo {
					t.Fatalf("micro-batch %+v after rows %d, logits %d", mb, lo, logits)
				}
				for i, s := range mb.Batch.Seq {
					if fmt.Sprint(mb.Batch.BlockTables[s]) != fmt.Sprint(tc.b.BlockTables[tc.b.Seq[mb.Lo+i]]) {
						t.Errorf("row %d: table %v, want %v", mb.Lo+i, mb.Batch.BlockTables[s], tc.b.BlockTables[tc.b.Seq[mb.Lo+i]])
					}
				}
				lo, logits = mb.Hi, logits+mb.Batch.NumLogits()
			}
			if fmt.Sprint(his) != fmt.Sprint(tc.bounds) {
				t.Errorf("cuts %v, want %v", his, tc.bounds)
			}
		})
	}
}

// checkStageWeights checks that a stage's model holds its own layers'
// weights and no other.
func checkStageWeights(t *testing.T, m *model.Model, st model.Stage) {
	t.Helper()
	w, c := m.Weights, &m.Config
	for l, lw := range w.Layers {
		in := l >= st.Lo && l < st.Hi
		if has := lw.AttnNorm != nil; has != in {
			t.Errorf("stage %v: layer %d loaded: %v", st, l, has)
		}
	}
	if (w.TokEmbd != nil) != (st.Lo == 0 || st.Hi == c.Layers && c.TiedOutput) {
		t.Errorf("stage %v: token embedding loaded: %v", st, w.TokEmbd != nil)
	}
	if (w.Output != nil) != (st.Hi == c.Layers) {
		t.Errorf("stage %v: output head loaded: %v", st, w.Output != nil)
	}
}
