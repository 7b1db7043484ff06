package actors

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/sample"
)

// draftRunner runs speculative decoding's draft model (SpecDraft): its own
// backend (device) and its own KV blocks, a block table per sequence, and
// greedy drafting. Its actor (draftDevice) calls it; the mutex is for
// tests reading its pool.
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
	maxLen    int   // the draft model's context: positions past it are not drafted
	failures  int   // failed forward passes in a row
	asked     int64 // asks answered with a draft (for tests)
}

// draftSeq is one sequence's state in the draft model's cache.
type draftSeq struct {
	table []int32 // its blocks
	fed   []int32 // the tokens whose K/V the blocks hold, in order
	// s samples the draft of a sampled request (its parameters, seeded
	// apart from the target's draws); nil: greedy drafting.
	s   *sample.Sampler
	dst sample.Dist // scratch for q
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
	r := &draftRunner{be: be, vocab: d.Config.VocabSize, blockSize: be.BlockSize(), seqs: make(map[uint64]*draftSeq),
		maxLen: d.Config.ContextLen}
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

// draftAsk asks the draft device for a sequence's draft: up to K tokens
// to follow Tokens (its prompt and output), stopping early at a token whose
// probability is below PMin. The answer is a *draftReply.
type draftAsk struct {
	ID     uint64
	Tokens []int32
	K      int
	PMin   float32
	// Params are the request's sampling parameters and Draw the draw
	// number of the first draft token (the sequence's output count): a
	// sampled request's draft tokens are drawn from the draft model's
	// distribution after the same transforms, seeded by draw, and sent with
	// it (draftReply.Q) for rejection sampling. nil Params: greedy.
	Params *messages.SamplingParams
	Draw   uint64
}

// draftSalt separates the draft's random stream from the target's draws.
const draftSalt = 0x6a09e667f3bcc909

// draftMinRatio: the draft's q leaves out tokens below this fraction of
// the most likely one's probability (the draft draws from the q it sends,
// so this costs only acceptance, not exactness) to keep messages small.
const draftMinRatio = 1e-4

// maxDraftFailures is how many failed forward passes in a row turn the
// draft model off (requests go on without speculation).
const maxDraftFailures = 3

// drafting is one sequence's part of a proposal in progress.
type drafting struct {
	ask  int       // index into the asks
	s    *draftSeq // its state
	next []int32   // the tokens to feed next
	hist []int32   // the penalties' history (nil: no penalties)
}

// sampled is a draft run's sampler when the ask's request samples with a
// fixed distribution (sample.Params.HasDist; infill left out), else nil.
func (s *draftSeq) sampler(p *messages.SamplingParams) *sample.Sampler {
	if p == nil || p.Infill {
		return nil
	}
	sp := SampleParams(p)
	sp.WantLogprob, sp.Logprobs = false, 0
	if !sp.HasDist() {
		return nil
	}
	if s.s == nil {
		var err error
		if s.s, err = sample.New(sp); err != nil {
			return nil
		}
	}
	return s.s
}

// proposeAll drafts for every ask at once: each forward pass of the draft
// model carries one run per sequence still drafting (its tokens not yet
// in the cache, then one draft token at a time). An ask whose sequence
// the draft KV pool has no room for, or any ask when the device failed,
// gets no draft.
func (r *draftRunner) proposeAll(asks []*draftAsk) ([][]int32, [][]messages.DraftDist) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]int32, len(asks))
	qs := make([][]messages.DraftDist, len(asks))
	if r.failures >= maxDraftFailures {
		return out, qs
	}
	var run []drafting
	for i, a := range asks {
		if r.maxLen > 0 {
			a.K = min(a.K, r.maxLen-len(a.Tokens)+1) // its last draft token is not fed
		}
		if a.K <= 0 || len(a.Tokens) == 0 {
			continue
		}
		s := r.seqs[a.ID]
		if s == nil {
			s = &draftSeq{}
			r.seqs[a.ID] = s
		}
		if !r.reserve(s, len(a.Tokens)+a.K-1) {
			continue
		}
		// Keep the K/V of the common prefix (what was accepted), and feed
		// at least the last token again for its logits.
		p := min(commonPrefix(s.fed, a.Tokens), len(a.Tokens)-1)
		s.fed = s.fed[:p]
		d := drafting{ask: i, s: s, next: a.Tokens[p:]}
		if a.Params != nil {
			if n, ok := historyWindow(a.Params); ok {
				d.hist = a.Tokens
				if n > 0 && len(d.hist) > n {
					d.hist = d.hist[len(d.hist)-n:]
				}
				d.hist = slices.Clone(d.hist)
			}
		}
		run = append(run, d)
	}
	r.asked += int64(len(run))
	for len(run) > 0 {
		if err := r.forward(run); err != nil {
			r.fail()
			return make([][]int32, len(asks)), make([][]messages.DraftDist, len(asks))
		}
		r.failures = 0
		keep := run[:0]
		for j, d := range run {
			a := asks[d.ask]
			tok, q, ok := r.pick(j, &d, a, uint64(len(out[d.ask])))
			if !ok {
				continue
			}
			out[d.ask] = append(out[d.ask], tok)
			if q != nil {
				qs[d.ask] = append(qs[d.ask], *q)
			}
			if d.hist != nil {
				d.hist = append(d.hist, tok)
			}
			if len(out[d.ask]) < a.K {
				d.next = []int32{tok}
				keep = append(keep, d)
			}
		}
		run = keep
	}
	for i := range qs {
		if len(qs[i]) != len(out[i]) {
			qs[i] = nil // greedy, or the sampler failed part-way: one-hot
		}
	}
	return out, qs
}

// pick chooses the draft token after run d's last logits (row j), the
// draft's i'th: greedy (the argmax, kept when its probability is at least
// the ask's PMin), or, for a sampled request, drawn from the draft model's
// distribution q after the request's transforms, seeded by the token's
// draw, kept when q's largest probability is at least PMin (a test that
// does not look at the token drawn, as the rejection rule needs), and
// returned with q.
func (r *draftRunner) pick(j int, d *drafting, a *draftAsk, i uint64) (int32, *messages.DraftDist, bool) {
	logits := r.logits[j*r.vocab : (j+1)*r.vocab]
	if s := d.s.sampler(a.Params); s != nil {
		var err error
		d.s.dst, err = s.Dist(logits, d.hist, draftMinRatio, d.s.dst)
		if err == nil && len(d.s.dst.IDs) > 0 {
			if slices.Max(d.s.dst.P) < a.PMin {
				return 0, nil, false
			}
			s.Seek(a.Params.Seed^draftSalt, a.Draw+i)
			tok := s.DrawDist(d.s.dst)
			q := &messages.DraftDist{IDs: slices.Clone(d.s.dst.IDs), P: slices.Clone(d.s.dst.P)}
			return tok, q, true
		}
	}
	tok, prob := argmaxProb(logits)
	return tok, nil, prob >= a.PMin
}

// fail counts a failed forward pass and forgets what every sequence's
// blocks hold (a failed pass may have written some of them): the next
// proposals feed their tokens again.
func (r *draftRunner) fail() {
	r.failures++
	for _, s := range r.seqs {
		s.fed = s.fed[:0]
	}
}

// forward runs the draft model over each run's next tokens at the
// positions after its fed ones; row j of r.logits is run j's last logits.
func (r *draftRunner) forward(run []drafting) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("actors: the draft model's forward pass panicked: %v", p)
		}
	}()
	b := &r.batch
	b.Reset()
	for j, d := range run {
		b.BlockTables = append(b.BlockTables, d.s.table)
		for i, t := range d.next {
			b.Add(t, int32(len(d.s.fed)+i), int32(j), i == len(d.next)-1)
		}
	}
	n := len(run) * r.vocab
	if len(r.logits) < n {
		r.logits = make([]float32, n)
	}
	if err := r.be.Forward(b, r.logits[:n]); err != nil {
		return fmt.Errorf("actors: the draft model's forward pass: %w", err)
	}
	for _, d := range run {
		d.s.fed = append(d.s.fed, d.next...)
	}
	return nil
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

// draftsAsked is how many asks the runner drafted for.
func (r *draftRunner) draftsAsked() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked
}

// usedBlocks is how many of the draft pool's blocks sequences hold (for
// tests: none once every request has ended).
func (r *draftRunner) usedBlocks() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.be.NumBlocks() - len(r.free)
}
