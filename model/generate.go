package model

import (
	"context"
	"errors"
	"fmt"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model/sample"
)

// ErrContextFull is returned when a prompt does not fit in the context.
var ErrContextFull = errors.New("prompt does not fit in the context")

// GenerateOptions control a single-sequence generation.
type GenerateOptions struct {
	MaxTokens  int           // tokens to generate at most; <= 0: until the context is full
	ContextLen int           // positions available; 0: the model's training context
	Sampling   sample.Params // the zero value is greedy
	IgnoreEOG  bool          // keep going past end-of-generation tokens
	Workers    int           // goroutines for the forward pass; 0: 2
	KVCache    kv.CacheType  // element type of the KV cache; the zero value is F16
}

// Generate runs one sequence: the prompt as one batch, then one token per
// step, calling emit with each sampled token (and its sample.Token details).
// It stops at MaxTokens, an end-of-generation token (not emitted), a full
// context, an emit error, or ctx's end. It is the simple path for tools; the
// runtime batches many sequences through Forward itself.
func (m *Model) Generate(ctx context.Context, prompt []int32, o GenerateOptions, emit func(sample.Token) error) error {
	c := &m.Config
	nCtx := o.ContextLen
	if nCtx <= 0 {
		nCtx = c.ContextLen
	}
	if len(prompt) == 0 {
		return errors.New("model: empty prompt")
	}
	if len(prompt) >= nCtx {
		return fmt.Errorf("model: %w: %d tokens, context %d", ErrContextFull, len(prompt), nCtx)
	}
	total := nCtx
	if o.MaxTokens > 0 {
		total = min(nCtx, len(prompt)+o.MaxTokens)
	}
	sampler, err := sample.New(o.Sampling)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(),
		NumBlocks: (total + kv.DefaultBlockSize - 1) / kv.DefaultBlockSize, Type: o.KVCache})
	if err != nil {
		return err
	}
	table, err := kv.NewPool(cache.NumBlocks).Grow(nil, total, cache.BlockSize)
	if err != nil {
		return err
	}
	workers := o.Workers
	if workers <= 0 {
		workers = 2
	}
	st := NewState(c, workers)
	logits := make([]float32, c.VocabSize)
	history := append(make([]int32, 0, total), prompt...)
	var b Batch
	b.BlockTables = [][]int32{table}
	for i, id := range prompt {
		b.Add(id, int32(i), 0, i == len(prompt)-1)
	}
	for len(history) < total {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.Forward(st, &b, cache, logits); err != nil {
			return err
		}
		tok, err := sampler.Sample(logits, history)
		if err != nil {
			return err
		}
		if !o.IgnoreEOG && m.Tokenizer != nil && m.Tokenizer.IsEOG(tok.ID) {
			return nil
		}
		if err := emit(tok); err != nil {
			return err
		}
		history = append(history, tok.ID)
		b.Reset()
		b.BlockTables = append(b.BlockTables, table)
		b.Add(tok.ID, int32(len(history)-1), 0, true)
	}
	return nil
}
