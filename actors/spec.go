package actors

import (
	"slices"

	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/sample"
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
	q.Draft, e.dmasks, e.dx, e.dq = nil, nil, nil, nil
	switch {
	case len(req.DraftQ) > 0 && len(req.DraftQ) == len(req.Draft) && len(req.DraftMasks) == 0:
		// The last token is the look-ahead: only the run's last row
		// verifies it, so the scheduler is given the others.
		e.dx, e.dq = req.Draft, req.DraftQ
		if len(req.Draft) > 1 {
			q.Draft = req.Draft[:len(req.Draft)-1]
		}
	case len(req.DraftMasks) == 0 || len(req.DraftMasks) == len(req.Draft):
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
		// A row with the draft's q verifies by rejection sampling, the run's
		// last row too (the look-ahead, or the next draft token of a run
		// the scheduler cut, or of a recomputed sequence's prefill): a
		// position's token is the same wherever the steps' runs end.
		if i < len(e.dq) {
			spec.Draft, spec.DraftQ = e.dx[i], &e.dq[i]
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
	if e := b.seqs[id]; e != nil {
		e.dx, e.dq = nil, nil // verified (a draft with q is used once)
		res.NoDraft = e.dev.sched.SpecBusy()
	}
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

// sampleOrVerify samples a row (s Seeked to its draw): plainly, or, with a
// draft model's q (SampleSpec.DraftQ), by rejection sampling against it.
// Without a q a verified row is a plain sample compared with the draft
// token afterwards: the rule for a one-hot q (n-gram), which keeps the
// output the plain output.
func sampleOrVerify(s *sample.Sampler, row []float32, spec messages.SampleSpec) (sample.Token, error) {
	if spec.DraftQ == nil {
		return s.Sample(row, spec.History)
	}
	return s.Verify(row, spec.History, spec.Draft, sample.Dist{IDs: spec.DraftQ.IDs, P: spec.DraftQ.P})
}
