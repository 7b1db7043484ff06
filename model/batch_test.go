package model_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// TestRaggedBatch runs every reference case of a model at once: sequences
// start at different steps, prefill chunks of one mix with decode tokens of
// others, and blocks come from one shared pool in interleaved order. Each
// sequence's logits must equal those of running it alone.
func TestRaggedBatch(t *testing.T) {
	m := openModel(t, filepath.Join(modelsDir(t), "stories260K.gguf"))
	c := &m.Config
	cases := loadCases(t, "stories260K")
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: 64, BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	pool := kv.NewPool(cache.NumBlocks)
	type seq struct {
		ids    []int32
		done   int // tokens fed so far
		start  int // step at which it joins
		table  []int32
		logits []float32
	}
	seqs := make([]*seq, len(cases))
	for i, rc := range cases {
		seqs[i] = &seq{ids: append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...), start: i}
	}
	st := model.NewState(c, 2)
	var b model.Batch
	for step := 0; ; step++ {
		b.Reset()
		var active []*seq
		for _, s := range seqs {
			if step < s.start || s.done >= len(s.ids)-1 {
				continue
			}
			chunk := 1
			if s.done == 0 {
				chunk = 3 // chunked prefill: the prompt arrives 3 tokens a step
			}
			chunk = min(chunk, len(s.ids)-1-s.done)
			if s.table, err = pool.Grow(s.table, s.done+chunk, cache.BlockSize); err != nil {
				t.Fatal(err)
			}
			si := int32(len(b.BlockTables))
			b.BlockTables = append(b.BlockTables, s.table)
			for p := s.done; p < s.done+chunk; p++ {
				b.Add(s.ids[p], int32(p), si, true)
			}
			s.done += chunk
			active = append(active, s)
		}
		if len(active) == 0 {
			break
		}
		out := make([]float32, b.NumLogits()*c.VocabSize)
		if err := m.Forward(st, &b, cache, out); err != nil {
			t.Fatal(err)
		}
		r := 0
		for i := range b.Tokens {
			s := active[b.Seq[i]]
			s.logits = append(s.logits, out[r*c.VocabSize:(r+1)*c.VocabSize]...)
			r++
		}
	}
	for i, s := range seqs {
		rc := cases[i]
		alone := teacherForced(t, m, len(rc.PromptIDs), s.ids)
		maxd := 0.0
		for j := range alone {
			maxd = math.Max(maxd, math.Abs(float64(alone[j]-s.logits[j])))
		}
		t.Logf("sequence %d: max |Δ| batched vs alone %.2g", i, maxd)
		if maxd > 1e-4 {
			t.Errorf("sequence %d: batched logits differ from running alone by %g", i, maxd)
		}
		pool.Release(s.table)
	}
	if pool.NumFree() != cache.NumBlocks {
		t.Errorf("%d blocks free after release, want %d", pool.NumFree(), cache.NumBlocks)
	}
}

// TestForwardAllocs checks that a warm decode step allocates nothing: the
// State's scratch, the MatMuler's and the attention workers are reused.
func TestForwardAllocs(t *testing.T) {
	for _, rel := range []string{"stories260K.gguf", "synthetic/synth-llama-tiny256-Q4_0.gguf"} {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			checkDecodeAllocs(t, openModel(t, filepath.Join(modelsDir(t), rel)), kv.F16)
		})
	}
}

// checkDecodeAllocs checks that m's decode step at position 0 allocates
// nothing once warm, with a cache of type typ.
func checkDecodeAllocs(t *testing.T, m *model.Model, typ kv.CacheType) {
	c := &m.Config
	cache, table := seqCache(t, c, 32, typ)
	st := model.NewState(c, 2)
	b := &model.Batch{BlockTables: [][]int32{table}}
	logits := make([]float32, c.VocabSize)
	b.Add(1, 0, 0, true)
	if err := m.Forward(st, b, cache, logits); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() {
		if err := m.Forward(st, b, cache, logits); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a decode step allocates %v times", n)
	}
}
