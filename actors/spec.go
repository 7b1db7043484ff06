package actors

import (
	"slices"

	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

// The batcher's part of speculative decoding (see ARCHITECTURE.md): a
// sequence's draft becomes rows of its run in the step, and the run's
// samples its StepResult.

// takeDraft keeps the draft of a sequence's step request for its next
// step: the draft tokens, and the masks of their run when the sequence is
// masked. A draft whose masks do not match it is dropped.
func (b *batcher) takeDraft(e *seqEntry, req *messages.StepRequest) {
	q := e.dev.sched.Get(kv.SeqID(req.SeqID))
	if q == nil || e.new.Embed != nil {
		return
	}
	q.Draft, e.dmasks = nil, nil
	if len(req.DraftMasks) == 0 || len(req.DraftMasks) == len(req.Draft) {
		q.Draft, e.dmasks = req.Draft, req.DraftMasks
	}
}

// appendSampleSpecs appends how to sample q's next token and, for each of
// its first draft draft tokens, the token after it: the parameters, the
// history the penalties look at (with the draft tokens before the row), the
// draw number (a seeded draw depends only on it, so a row draws what plain
// decoding draws at that position), and the grammar mask (the latest the
// sequence sent, so a preempted sequence resumes under the right one; a
// sequence with a mask has no draft).
func (b *batcher) appendSampleSpecs(specs []messages.SampleSpec, q *sched.Seq, draft int) []messages.SampleSpec {
	e := b.seqs[uint64(q.ID)]
	p := &e.new.Sampling
	n, penalized := historyWindow(p)
	for i := 0; i <= draft; i++ {
		spec := messages.SampleSpec{SeqID: uint64(q.ID), Params: p, Draw: uint64(q.NumOutput() + i), Mask: e.mask}
		if i < draft {
			spec.Verify, spec.Draft = true, q.Draft[i]
		}
		if i > 0 && e.dmasks != nil {
			spec.Mask = e.dmasks[i-1]
		}
		if penalized {
			h := slices.Concat(q.Tokens, q.Draft[:i])
			if n > 0 && len(h) > n {
				h = h[len(h)-n:]
			}
			if e.new.Images != nil { // image keys back to placeholders (images.go)
				unkeyHistory(h, e.new, len(q.Tokens)+i-len(h))
			}
			spec.History = h
		}
		specs = append(specs, spec)
	}
	return specs
}

// stepResult is what a step gave one sequence: its run's tokens (one
// without a draft), or the error of the row that failed.
func (b *batcher) stepResult(done *messages.StepDone, o sched.Outcome) *messages.StepResult {
	id := uint64(o.Seq.ID)
	res := &messages.StepResult{SeqID: id, Token: done.Tokens[o.Row], Finish: o.Finish,
		Drafted: o.Drafted, Accepted: o.Accepted}
	if o.Drafted > 0 {
		res.Tokens = done.Tokens[o.Row : o.Row+o.N]
	}
	for r := o.Row; done.Errs != nil && r < o.Row+o.N; r++ {
		if done.Errs[r] != "" {
			res.Finish, res.Err = messages.FinishError, done.Errs[r]
		}
	}
	if o.Row < len(done.Embeddings) {
		res.Embedding = done.Embeddings[o.Row]
	}
	return res
}
