package model_test

import (
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

var benchModels = []string{
	"stories260K.gguf",
	"TinyStories-656K-Q8_0.gguf",
	"tinystories-656k-safetensors",
	"synthetic/synth-llama-tiny256-Q4_0.gguf",
	"synthetic/synth-llama-tiny256-Q8_0.gguf",
	"synthetic/synth-llama-tiny256-Q4_K_M.gguf",
	"synthetic/synth-llama-tiny256-F16.gguf",
}

func openBench(b *testing.B, rel string) *model.Model {
	return reftest.Open(b, filepath.Join(modelsDir(b), rel))
}

// BenchmarkPrefill runs a 128-token prompt as one batch (pp128).
func BenchmarkPrefill(b *testing.B) {
	const n = 128
	for _, rel := range benchModels {
		b.Run(filepath.Base(rel), func(b *testing.B) {
			m := openBench(b, rel)
			c := &m.Config
			cache, table := seqCache(b, c, n, kv.F16)
			st := model.NewState(c, 2)
			batch := &model.Batch{BlockTables: [][]int32{table}}
			for i := range n {
				batch.Add(int32(i%c.VocabSize), int32(i), 0, i == n-1)
			}
			logits := make([]float32, c.VocabSize)
			for b.Loop() {
				if err := m.Forward(st, batch, cache, logits); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkDecode generates one token per step after a 64-token context (tg).
func BenchmarkDecode(b *testing.B) {
	const ctx = 64
	for _, rel := range benchModels {
		b.Run(filepath.Base(rel), func(b *testing.B) {
			m := openBench(b, rel)
			benchDecode(b, m, kv.F16, 2, ctx)
		})
	}
}

// benchDecode prefills ctx tokens into a cache of type typ, then times
// decoding one token after them on workers workers (tok/s); it returns
// the cache.
func benchDecode(b *testing.B, m *model.Model, typ kv.CacheType, workers, ctx int) *kv.Cache {
	c := &m.Config
	cache, table := seqCache(b, c, ctx+1, typ)
	st := model.NewState(c, workers)
	batch := &model.Batch{BlockTables: [][]int32{table}}
	for i := range ctx {
		batch.Add(int32(i%c.VocabSize), int32(i), 0, false)
	}
	logits := make([]float32, c.VocabSize)
	if err := m.Forward(st, batch, cache, logits); err != nil {
		b.Fatal(err)
	}
	batch.Reset()
	batch.BlockTables = append(batch.BlockTables, table)
	batch.Add(1, int32(ctx), 0, true)
	for b.Loop() {
		if err := m.Forward(st, batch, cache, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
	return cache
}
