package model

import (
	"fmt"
	"math"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/kv"
)

// Forward runs the batch through the model: it writes every token's keys and
// values into cache through the batch's block tables and stores the logits of
// the rows with Logits set into logits, (NumLogits, VocabSize), in batch order.
//
// Forward is batch-invariant: the logits of a token depend only on the tokens
// of its sequence up to it, bit for bit, not on the other tokens in the
// batch, their order, how the sequence was split over calls (prefill whole,
// in chunks, or decoded token by token), nor the State's number of workers
// (unless State.MatchGGMLBatching is on). Every row goes through the same
// per-row arithmetic: matrix products per (row, weight row), attention per
// (token, head) over the cached positions in order.
func (m *Model) Forward(s *State, b *Batch, cache *kv.Cache, logits []float32) error {
	if m.bert != nil {
		if b.HasEmbeds() {
			return fmt.Errorf("model: an encoder takes no input embeddings")
		}
		return m.bertForward(s, b, cache, logits) // an encoder: bert.go
	}
	if m.Weights.Stage != (Stage{}) {
		return ErrStage
	}
	n, err := m.prepare(s, b, cache, logits, true)
	if err != nil || n == 0 {
		return err
	}
	if err := m.embed(s, b); err != nil {
		return err
	}
	if err := m.layers(s, b, cache, 0, len(m.Weights.Layers), n); err != nil {
		return err
	}
	m.storeHidden(s, b) // embeddings: see embed.go
	return m.head(s, b, logits)
}

// prepare checks the batch and the buffers (the logits' only when
// wantLogits), sizes the State and fills each token's cache slot and rope
// table. It returns the batch's token count.
func (m *Model) prepare(s *State, b *Batch, cache *kv.Cache, logits []float32, wantLogits bool) (int, error) {
	c := &m.Config
	if cache.Layers != c.Layers || cache.KVDim != c.KVDim() {
		return 0, fmt.Errorf("model: cache has %d layers of kv dim %d, model needs %d of %d", cache.Layers, cache.KVDim, c.Layers, c.KVDim())
	}
	if cache.Type == kv.Q8_0 && c.HeadDim%32 != 0 {
		return 0, fmt.Errorf("model: a q8_0 KV cache needs a head size that is a multiple of 32 (got %d)", c.HeadDim)
	}
	if err := b.Validate(c, cache.BlockSize, cache.NumBlocks); err != nil {
		return 0, err
	}
	if nOut := b.NumLogits(); wantLogits && len(logits) < nOut*c.VocabSize {
		return 0, fmt.Errorf("model: logits buffer holds %d values, need %d×%d", len(logits), nOut, c.VocabSize)
	}
	n := len(b.Tokens)
	if n == 0 {
		return 0, nil
	}
	maxPos := 0
	for _, p := range b.Positions {
		maxPos = max(maxPos, int(p))
	}
	s.reserve(c, n, maxPos)
	s.setLoRA(m, b) // the projections' adapters (lora.go)
	for i := range n {
		slot, _ := cache.Slot(b.BlockTables[b.Seq[i]], int(b.Positions[i])) // checked by validate
		s.slots[i] = int32(slot)
		if m.Features.Has(MRoPE) { // qwen2vl.go
			pos := [3]int32{b.Positions[i], b.Positions[i], b.Positions[i]}
			if len(b.RopePositions) != 0 {
				pos = b.RopePositions[i]
			}
			c.mropeTable(s.rope[i*c.RopeDim:(i+1)*c.RopeDim], pos)
		} else {
			c.ropeTable(s.rope[i*c.RopeDim:(i+1)*c.RopeDim], int(b.Positions[i]), c.RopeBase, c.RopeScale)
		}
		if c.swaRope() {
			c.ropeTable(s.ropeL[i*c.RopeDim:(i+1)*c.RopeDim], int(b.Positions[i]), c.RopeBaseSWA, c.RopeScaleSWA)
		}
		scaleRope(s.rope[i*c.RopeDim:(i+1)*c.RopeDim], c.RopeAttnFactor)
	}
	return n, nil
}

// embed writes each token's embedding row into the residual stream s.x.
func (m *Model) embed(s *State, b *Batch) error {
	c, w := &m.Config, m.Weights
	dim := c.Dim
	for i, tok := range b.Tokens {
		if len(b.Embeds) != 0 && b.Embeds[i] != nil { // an image's row (Batch.Embeds)
			copy(s.x[i*dim:(i+1)*dim], b.Embeds[i][:dim])
			continue
		}
		if err := compute.Dequantize(w.TokEmbd.Type, w.TokEmbd.Row(int(tok)), s.x[i*dim:(i+1)*dim]); err != nil {
			return fmt.Errorf("model: embedding: %w", err)
		}
		if m.Features.Has(EmbedScale) {
			scale(s.x[i*dim:(i+1)*dim], c.EmbedScale)
		}
	}
	return nil
}

// layers runs the transformer blocks [lo, hi) over the n tokens in s.x.
func (m *Model) layers(s *State, b *Batch, cache *kv.Cache, lo, hi, n int) error {
	for l := lo; l < hi; l++ {
		if err := m.layer(s, b, cache, l, n); err != nil {
			return err
		}
		if l < m.Config.Deepstack {
			m.deepstack(s, b, l)
		}
	}
	return nil
}

// head is the final norm of the rows that need logits, gathered, then the
// output head, into logits (NumLogits, VocabSize).
func (m *Model) head(s *State, b *Batch, logits []float32) error {
	c, w := &m.Config, m.Weights
	dim, nOut := c.Dim, b.NumLogits()
	r := 0
	for i, want := range b.Logits {
		if want {
			compute.RMSNorm(s.xo[r*dim:(r+1)*dim], s.x[i*dim:(i+1)*dim], w.OutputNorm, c.NormEps)
			r++
		}
	}
	if err := s.mm.MatMul(logits, s.xo, nOut, w.Output); err != nil {
		return err
	}
	if m.Features.Has(FinalSoftcap) {
		compute.SoftCap(logits[:nOut*c.VocabSize], c.FinalSoftcap)
	}
	return nil
}

// attention computes causal attention for every (token, head) of the batch,
// reading keys and values through the block tables; work is split across
// the State's workers (s.mm's crew, whose helpers are spinning from the q,
// k, v products), with a body built once (no allocation per call), in items
// of one token and up to attnGroup(c) heads that share a KV head.
func (m *Model) attention(s *State, b *Batch, cache *kv.Cache, l, n int) {
	items := n * m.Config.KVHeads * groupsPerKVHead(&m.Config)
	workers := min(s.workers, items)
	s.attn = attnJob{m: m, b: b, cache: cache, l: l, items: items, per: (items + workers - 1) / workers}
	if s.attnShare == nil {
		s.attnShare = func(wi int) {
			j := &s.attn
			j.m.attendRange(s, j.b, j.cache, j.l, wi*j.per, min(j.items, (wi+1)*j.per), s.scores[wi], &s.q8[wi])
		}
	}
	s.mm.Parallel(workers, s.attnShare)
	s.attn = attnJob{}
}

// attnGroup is how many query heads of one KV head attention takes at once
// (compute.AttnGroup: one pass over the cached rows serves them all).
func attnGroup(c *Config) int {
	return min(compute.AttnGroup(c.HeadDim), c.Heads/c.KVHeads)
}

// groupsPerKVHead is how many attention items the query heads of one KV
// head make.
func groupsPerKVHead(c *Config) int {
	g := attnGroup(c)
	return (c.Heads/c.KVHeads + g - 1) / g
}

// attendRange computes causal attention for the items [lo, hi), each one
// token and the heads h0..h0+g-1 of one KV head, as ggml's CPU flash
// attention does (llama.cpp's default on CPU), head by head: q is rounded
// to f16; the scores of all cached positions are computed a cache block at
// a time (compute.DotRowsGroup) and scaled; an online softmax over the
// positions in order gives each one a rescale ms = e^(M_old−M) of the
// accumulator (1 when the running max M does not change) and a weight
// vs = e^(s−M); the values are accumulated in f16
// (compute.VKQRowsF16Group), the weights' sum S = fma(S, ms, vs) in
// float32, and the output is VKQ/S. With a Q8_0 cache, as ggml does for a
// quantized K and V, q is quantized to Q8_0 (q8) for the scores
// (compute.DotRowsQ8_0Group) and the values are accumulated in float32
// (compute.VKQRowsQ8_0Group). scratch holds attnGroup·(head_dim +
// 2·context) values. Each head's arithmetic depends only on its own q and
// the cache, never on the batch around it or on the heads it is grouped
// with.
func (m *Model) attendRange(s *State, b *Batch, cache *kv.Cache, l, lo, hi int, scratch []float32, q8 *compute.Q8_0Query) {
	c := &m.Config
	hd, qDim, group, kvDim := c.HeadDim, c.Heads*c.HeadDim, c.Heads/c.KVHeads, c.KVDim()
	gMax, perKV := attnGroup(c), groupsPerKVHead(c)
	scale := float32(1 / math.Sqrt(float64(hd)))
	if m.Features.Has(QueryScale) { // q was scaled already
		scale = 1
	}
	window := c.window(l)
	var sinks []float32 // (heads) gpt-oss's sink logits, or nil
	if m.Features.Has(AttnSinks) {
		sinks = m.Weights.Layers[l].Sinks
	}
	bs, rowBytes := cache.BlockSize, cache.RowBytes()
	ctx := (len(scratch)/gMax - hd) / 2
	q16, vs, ms := scratch[:gMax*hd], scratch[gMax*hd:gMax*(hd+ctx)], scratch[gMax*(hd+ctx):gMax*(hd+2*ctx)]
	for it := lo; it < hi; it++ {
		i, kh, gi := it/(c.KVHeads*perKV), it/perKV%c.KVHeads, it%perKV
		h0 := kh*group + gi*gMax
		g := min(gMax, group-gi*gMax)
		kvOff, kvOff8 := kh*hd, kh*hd/32*compute.Q8_0BlockBytes
		q := s.q[i*qDim+h0*hd : i*qDim+(h0+g)*hd]
		out := s.att[i*qDim+h0*hd : i*qDim+(h0+g)*hd]
		table := b.BlockTables[b.Seq[i]]
		n := s.attended(b, i)
		j1 := 0 // the first position attended to: the window's start, back from the row's own position
		if window > 0 {
			j1 = max(0, int(b.Positions[i])+1-window)
		}
		switch cache.Type {
		case kv.F16:
			compute.RoundF16s(q16[:g*hd], q)
			for j0 := j1; j0 < n; j0 = nextBlock(j0, bs) {
				kb, _ := cache.BlockF16(l, int(table[j0/bs]))
				compute.DotRowsGroup(vs[j0:], ctx, q16[:g*hd], g, kb[kvOff+j0%bs*kvDim:], kvDim, min(nextBlock(j0, bs), n)-j0)
			}
		case kv.Q8_0:
			q8.Set(q)
			for j0 := j1; j0 < n; j0 = nextBlock(j0, bs) {
				kb, _ := cache.Block(l, int(table[j0/bs]))
				compute.DotRowsQ8_0Group(vs[j0:], ctx, q8, g, kb[kvOff8+j0%bs*rowBytes:], rowBytes, min(nextBlock(j0, bs), n)-j0)
			}
		}
		var S, M [compute.MaxAttnGroup]float32
		for e := range g {
			v := vs[e*ctx+j1 : e*ctx+n]
			if m.Features.Has(AttnSoftcap) { // ggml: scale/c, then c·tanh
				compute.SoftCap(v, c.AttnSoftcap)
			}
			if sinks != nil {
				M[e] = maxScaled(v, scale)
			}
			S[e] = compute.OnlineSoftmax(v, ms[e*ctx+j1:e*ctx+n], scale)
		}
		clear(out)
		for j0 := j1; j0 < n; j0 = nextBlock(j0, bs) {
			rows := min(nextBlock(j0, bs), n) - j0
			switch cache.Type {
			case kv.F16:
				_, vb := cache.BlockF16(l, int(table[j0/bs]))
				compute.VKQRowsF16Group(out, g, vb[kvOff+j0%bs*kvDim:], kvDim, ms[j0:], vs[j0:], ctx, rows)
			case kv.Q8_0:
				_, vb := cache.Block(l, int(table[j0/bs]))
				compute.VKQRowsQ8_0Group(out, g, vb[kvOff8+j0%bs*rowBytes:], rowBytes, ms[j0:], vs[j0:], ctx, rows)
			}
		}
		for e := range g {
			if sinks != nil { // gptoss.go
				S[e] = attnSink(out[e*hd:(e+1)*hd], S[e], M[e], sinks[h0+e])
			}
			var inv float32
			if S[e] != 0 {
				inv = 1 / S[e]
			}
			for d := range out[e*hd : (e+1)*hd] {
				out[e*hd+d] *= inv
			}
		}
	}
}
