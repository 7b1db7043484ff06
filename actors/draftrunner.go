package actors

import (
	"fmt"
	"math"
	"sync"

	"github.com/troupe-llm/troupe/model"
)

// draftRunner runs speculative decoding's draft model (SpecDraft): its own
// backend (device) and its own KV blocks, a block table per sequence, and
// greedy drafting. The sequences call it from their own goroutines; its
// mutex makes it one device that drafts for one sequence at a time.
//
// A sequence's draft KV follows its accepted tokens without messages: the
// runner remembers the tokens whose K/V its cache holds for the sequence
// (fed), and a proposal first keeps only the longest common prefix of those
// and the sequence's tokens now, so draft tokens the target rejected are
// rolled back (their slots are written over) and accepted ones are kept.
type draftRunner struct {
	mu        sync.Mutex
	be        Backend
	vocab     int
	blockSize int
	free      []int32 // KV blocks no sequence holds
	seqs      map[uint64]*draftSeq
	batch     model.Batch
	logits    []float32
	broken    error // set when the backend failed: no more drafts
}

// draftSeq is one sequence's state in the draft model's cache.
type draftSeq struct {
	table []int32 // its blocks
	fed   []int32 // the tokens whose K/V the blocks hold, in order
}

// newDraftRunner starts the draft model's runner on its own backend, made
// by c.NewDraftBackend with numBlocks blocks of blockSize tokens, after
// checking that the draft model's vocabulary is the target's.
func newDraftRunner(target *model.Model, c SpecConfig, numBlocks, blockSize, workers int) (*draftRunner, error) {
	d := c.DraftModel
	switch {
	case d == nil:
		return nil, fmt.Errorf("actors: speculative type %s needs a draft model (SpecConfig.DraftModel)", SpecDraft)
	case c.NewDraftBackend == nil:
		return nil, fmt.Errorf("actors: speculative type %s needs SpecConfig.NewDraftBackend", SpecDraft)
	}
	if err := sameVocab(target, d); err != nil {
		return nil, err
	}
	be, err := c.NewDraftBackend(0, BackendConfig{NumBlocks: numBlocks, BlockSize: blockSize, Workers: workers})
	if err != nil {
		return nil, fmt.Errorf("actors: the draft model's device: %w", err)
	}
	r := &draftRunner{be: be, vocab: d.Config.VocabSize, blockSize: be.BlockSize(), seqs: make(map[uint64]*draftSeq)}
	for b := be.NumBlocks() - 1; b >= 0; b-- {
		r.free = append(r.free, int32(b))
	}
	return r, nil
}

// sameVocab reports an error when the draft model's vocabulary differs
// from the target's: its size, or (both having tokenizers) a token's text.
func sameVocab(target, draft *model.Model) error {
	tn, dn := target.Config.VocabSize, draft.Config.VocabSize
	if tn != dn {
		return fmt.Errorf("actors: the draft model's vocabulary has %d tokens, the model's %d: a draft model must share the model's vocabulary", dn, tn)
	}
	if target.Tokenizer == nil || draft.Tokenizer == nil {
		return nil
	}
	tv, dv := target.Tokenizer.Vocab().Tokens, draft.Tokenizer.Vocab().Tokens
	for i := range min(len(tv), len(dv)) {
		if tv[i] != dv[i] {
			return fmt.Errorf("actors: the draft model's token %d is %q, the model's %q: a draft model must share the model's vocabulary", i, dv[i], tv[i])
		}
	}
	return nil
}

// propose returns up to k tokens the draft model greedily predicts after
// tokens (the sequence's prompt and output), stopping early at a token
// whose probability is below pMin. It returns none when the draft model's
// KV pool has no room for the sequence, or its device failed (the request
// goes on without speculation).
func (r *draftRunner) propose(id uint64, tokens []int32, k int, pMin float32) []int32 {
	if k <= 0 || len(tokens) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken != nil {
		return nil
	}
	s := r.seqs[id]
	if s == nil {
		s = &draftSeq{}
		r.seqs[id] = s
	}
	if !r.reserve(s, len(tokens)+k-1) {
		return nil
	}
	// Keep the K/V of the common prefix, and feed at least the last token
	// again for its logits.
	p := min(commonPrefix(s.fed, tokens), len(tokens)-1)
	s.fed = s.fed[:p]
	var draft []int32
	next := tokens[p:]
	for len(draft) < k {
		tok, prob, err := r.feed(s, next)
		if err != nil {
			r.broken = err
			return nil
		}
		if prob < pMin {
			break
		}
		draft = append(draft, tok)
		next = []int32{tok}
	}
	return draft
}

// feed runs the draft model over toks at the positions after s.fed, and
// returns the argmax of the last one's logits and its probability.
func (r *draftRunner) feed(s *draftSeq, toks []int32) (tok int32, prob float32, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("actors: the draft model's forward pass panicked: %v", p)
		}
	}()
	b := &r.batch
	b.Reset()
	b.BlockTables = append(b.BlockTables, s.table)
	for i, t := range toks {
		b.Add(t, int32(len(s.fed)+i), 0, i == len(toks)-1)
	}
	if len(r.logits) < r.vocab {
		r.logits = make([]float32, r.vocab)
	}
	if err := r.be.Forward(b, r.logits[:r.vocab]); err != nil {
		return 0, 0, fmt.Errorf("actors: the draft model's forward pass: %w", err)
	}
	s.fed = append(s.fed, toks...)
	tok, prob = argmaxProb(r.logits[:r.vocab])
	return tok, prob, nil
}

// reserve gives s blocks for n positions; false when the pool is short
// (then s keeps what it has).
func (r *draftRunner) reserve(s *draftSeq, n int) bool {
	need := (n+r.blockSize-1)/r.blockSize - len(s.table)
	if need > len(r.free) {
		return false
	}
	for range need {
		s.table = append(s.table, r.free[len(r.free)-1])
		r.free = r.free[:len(r.free)-1]
	}
	return true
}

// release gives a sequence's blocks back; the sequence has ended.
func (r *draftRunner) release(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.seqs[id]; s != nil {
		r.free = append(r.free, s.table...)
		delete(r.seqs, id)
	}
}

// close closes the draft backend when it holds resources.
func (r *draftRunner) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return closeBackends([]Backend{r.be})
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// argmaxProb returns the argmax of logits (the lowest id on a tie, as
// greedy sampling) and its softmax probability.
func argmaxProb(logits []float32) (int32, float32) {
	best := 0
	for i, l := range logits {
		if l > logits[best] {
			best = i
		}
	}
	m, sum := float64(logits[best]), 0.0
	for _, l := range logits {
		sum += math.Exp(float64(l) - m)
	}
	return int32(best), float32(1 / sum)
}

// usedBlocks is how many of the draft pool's blocks sequences hold (for
// tests: none once every request has ended).
func (r *draftRunner) usedBlocks() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.be.NumBlocks() - len(r.free)
}
