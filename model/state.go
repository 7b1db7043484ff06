package model

import (
	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model/lora"
)

// State is the scratch memory of forward passes: activations for up to
// maxTokens tokens, grown when a bigger batch arrives and reused otherwise,
// so a steady stream of batches allocates nothing. One State per device.
type State struct {
	workers   int
	maxTokens int
	mm        *compute.MatMuler

	x      []float32           // (tokens, dim) residual stream
	xb     []float32           // (tokens, dim) normed input of a block
	q      []float32           // (tokens, heads*head_dim)
	k, v   []float32           // (tokens, kv_dim)
	att    []float32           // (tokens, heads*head_dim) attention output
	ob     []float32           // (tokens, dim) projection output
	gate   []float32           // (tokens, ffn)
	up     []float32           // (tokens, ffn)
	xo     []float32           // (logit rows, dim) normed rows that need logits
	hidden []float32           // (hidden rows, dim) ForwardHidden's output, nil otherwise
	qkv    []float32           // (tokens, 3*dim) an encoder's fused q, k, v (bert.go)
	encLen []int32             // (n_seqs) an encoder's sequence lengths: attention is bidirectional; nil otherwise
	slots  []int32             // (tokens) cache slot of each batch token
	rope   []float32           // (tokens, rope_dim) cos and sin of each token's rope angles
	ropeL  []float32           // (tokens, rope_dim) the same for local (sliding-window) layers with their own rope (Gemma 3)
	scores [][]float32         // (workers) g·(head_dim + 2·context): f16 q, softmax weights and rescales of g heads (attnGroup)
	q8     []compute.Q8_0Query // (workers) one head's q as Q8_0 (a Q8_0 KV cache)
	moe    moeScratch          // the expert FFNs' buffers (moe.go)
	lora   lora.Applier        // the LoRA updates' gathered rows (lora.go)
	// loraSeq and loraSets are the batch's Seq and LoRA during a Forward
	// (matMul reads them); loraSets nil: no adapters.
	loraSeq  []int32
	loraSets [][]lora.Scaled
	loraAll  [][]lora.Scaled // (n_seqs) the model's adapters for each sequence (setLoRA)

	attn      attnJob      // the attention call in flight
	attnShare func(wi int) // worker wi's share of it, built on first use
}

// attnJob is one attention call as its workers see it.
type attnJob struct {
	m          *Model
	b          *Batch
	cache      *kv.Cache
	l          int
	items, per int // (token, group of heads) items, and items per worker
}

// NewState returns scratch for c, using workers goroutines (at least 1).
// The number of workers does not change Forward's results.
func NewState(c *Config, workers int) *State {
	return &State{workers: max(1, workers), mm: compute.NewMatMuler(workers)}
}

// MatchGGMLBatching makes Forward follow llama.cpp's CPU backend also where
// that depends on the batch (compute.MatMuler.GGMLBatch: Q2_K and Q4_K
// weights), so that logits computed the way llama.cpp computed its
// references match them bit for bit. It gives up batch invariance: for
// reference tests only.
func (s *State) MatchGGMLBatching(on bool) { s.mm.GGMLBatch = on }

func (s *State) reserve(c *Config, tokens, maxPos int) {
	if tokens > s.maxTokens {
		qDim := c.Heads * c.HeadDim
		s.x = make([]float32, tokens*c.Dim)
		s.xb = make([]float32, tokens*c.Dim)
		s.q = make([]float32, tokens*qDim)
		s.k = make([]float32, tokens*c.KVDim())
		s.v = make([]float32, tokens*c.KVDim())
		s.att = make([]float32, tokens*qDim)
		s.ob = make([]float32, tokens*c.Dim)
		s.gate = make([]float32, tokens*c.FFNDim)
		s.up = make([]float32, tokens*c.FFNDim)
		s.xo = make([]float32, tokens*c.Dim)
		s.slots = make([]int32, tokens)
		s.rope = make([]float32, tokens*c.RopeDim)
		s.maxTokens = tokens
	}
	if c.swaRope() && len(s.ropeL) < s.maxTokens*c.RopeDim {
		s.ropeL = make([]float32, s.maxTokens*c.RopeDim)
	}
	if len(s.q8) != s.workers {
		s.q8 = make([]compute.Q8_0Query, s.workers)
	}
	g := attnGroup(c)
	if len(s.scores) == 0 || len(s.scores[0]) < g*(c.HeadDim+2*(maxPos+1)) {
		n := g * (c.HeadDim + 2*max(maxPos+1, 256))
		s.scores = make([][]float32, s.workers)
		for i := range s.scores {
			s.scores[i] = make([]float32, n)
		}
	}
}
