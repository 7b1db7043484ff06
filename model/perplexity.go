package model

import (
	"fmt"
	"math"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model/sample"
)

// Perplexity scores tokens the way llama.cpp's llama-perplexity does: the
// text is cut into windows of nCtx tokens, each run as a fresh sequence whose
// first token is replaced by bos (when bos >= 0), and only the second half
// of each window is scored. chunk, when not nil, is called after each window
// with the running perplexity. It needs at least 2*nCtx tokens. The KV
// cache holds values of type kvType (llama-perplexity's -ctk/-ctv).
func (m *Model) Perplexity(tokens []int32, nCtx int, bos int32, workers int, kvType kv.CacheType, chunk func(i int, ppl float64)) (float64, error) {
	c := &m.Config
	if nCtx < 4 {
		return 0, fmt.Errorf("model: perplexity context %d is too small", nCtx)
	}
	if len(tokens) < 2*nCtx {
		return 0, fmt.Errorf("model: perplexity needs at least %d tokens (2×context), the text has %d", 2*nCtx, len(tokens))
	}
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(),
		NumBlocks: (nCtx + kv.DefaultBlockSize - 1) / kv.DefaultBlockSize, Type: kvType})
	if err != nil {
		return 0, err
	}
	table, err := kv.NewPool(cache.NumBlocks).Grow(nil, nCtx, cache.BlockSize)
	if err != nil {
		return 0, err
	}
	st := NewState(c, max(1, workers))
	first := nCtx / 2
	logits := make([]float32, (nCtx-first)*c.VocabSize)
	logp := make([]float32, c.VocabSize)
	var b Batch
	var nll float64
	var count int
	for ch := 0; ch < len(tokens)/nCtx; ch++ {
		win := tokens[ch*nCtx : (ch+1)*nCtx]
		b.Reset()
		b.BlockTables = append(b.BlockTables, table)
		for j, id := range win {
			if j == 0 && bos >= 0 {
				id = bos
			}
			b.Add(id, int32(j), 0, j >= first && j < nCtx-1)
		}
		if err := m.Forward(st, &b, cache, logits); err != nil {
			return 0, err
		}
		for j := first; j < nCtx-1; j++ {
			sample.LogSoftmax(logp, logits[(j-first)*c.VocabSize:(j-first+1)*c.VocabSize])
			nll -= float64(logp[win[j+1]])
			count++
		}
		if chunk != nil {
			chunk(ch, math.Exp(nll/float64(count)))
		}
	}
	return math.Exp(nll / float64(count)), nil
}
