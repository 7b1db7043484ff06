package model_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/lora"
)

// BenchmarkLoRADecode: one decode step of 16 sequences (64 tokens of
// context each) with no adapter, and with 8 rank-16 adapters (every
// projection adapted), two sequences each, in the same batch; lora/base is
// the second's tokens/s over the first's (issue 33's target: at least 0.8).
func BenchmarkLoRADecode(b *testing.B) {
	const seqs, ctxLen, adapters = 16, 64, 8
	path := filepath.Join(modelsDir(b), "synthetic-more", "synth-llama-hd64-Q4_0.gguf")
	m := openBench(b, "synthetic-more/synth-llama-hd64-Q4_0.gguf")
	c := &m.Config
	var ads []*lora.Adapter
	for i := range adapters {
		ads = append(ads, writeAdapter(b, path, 16, 32, uint64(i+1)))
	}
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: seqs * ctxLen / 16})
	if err != nil {
		b.Fatal(err)
	}
	pool := kv.NewPool(cache.NumBlocks)
	prefill, step := &model.Batch{}, &model.Batch{}
	for s := range seqs {
		table, err := pool.Grow(nil, ctxLen, cache.BlockSize)
		if err != nil {
			b.Fatal(err)
		}
		prefill.BlockTables = append(prefill.BlockTables, table)
		for p := range ctxLen - 1 {
			prefill.Add(int32((s*7+p)%c.VocabSize), int32(p), int32(s), false)
		}
		step.Add(int32(s), ctxLen-1, int32(s), true)
	}
	step.BlockTables = prefill.BlockTables
	st := model.NewState(c, 2)
	if err := m.Forward(st, prefill, cache, nil); err != nil {
		b.Fatal(err)
	}
	logits := make([]float32, seqs*c.VocabSize)
	var mixed [][]lora.Scaled // (seqs) adapter s%8 on sequence s
	for s := range seqs {
		mixed = append(mixed, []lora.Scaled{{Adapter: ads[s%adapters], Scale: 1}})
	}
	// Steps with and without the adapters alternate, so that a loaded
	// machine slows both alike; the ratio is the figure to read.
	var with, without time.Duration
	for b.Loop() {
		for _, l := range [][][]lora.Scaled{nil, mixed} {
			step.LoRA = l
			start := time.Now()
			if err := m.Forward(st, step, cache, logits); err != nil {
				b.Fatal(err)
			}
			if l == nil {
				without += time.Since(start)
			} else {
				with += time.Since(start)
			}
		}
	}
	b.ReportMetric(float64(seqs*b.N)/without.Seconds(), "tok/s-base")
	b.ReportMetric(float64(seqs*b.N)/with.Seconds(), "tok/s-lora")
	b.ReportMetric(without.Seconds()/with.Seconds(), "lora/base")
}
