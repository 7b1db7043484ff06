package actors

import (
	"slices"

	"github.com/troupe-llm/troupe/actors/spec"
	"github.com/troupe-llm/troupe/messages"
)

// draftState is a sequence's side of speculative decoding: its tokens so
// far and its proposer. k 0: the sequence does not speculate.
type draftState struct {
	k, least int        // most and fewest draft tokens per step
	ngram    spec.NGram // the proposer
	tokens   []int32    // prompt, then the tokens output so far
}

// newDraftState is the draft state of a sequence of req, off when the
// runtime or the request does not speculate.
func newDraftState(rt *Runtime, req *messages.GenerateRequest) draftState {
	k, least := rt.draftLimits(req)
	if k == 0 {
		return draftState{}
	}
	return draftState{k: k, least: least, ngram: rt.cfg.Speculative.NGram, tokens: slices.Clone(req.Prompt)}
}

// record adds an output token.
func (d *draftState) record(tok int32) {
	if d.k > 0 {
		d.tokens = append(d.tokens, tok)
	}
}

// propose returns the draft to send with the sequence's next step request
// (nil: none): up to k tokens, dropped when fewer than least, or when the
// next sample is masked (a grammar or min_tokens: the mask of each draft
// position would be needed).
func (s *sequence) propose() []int32 {
	d := &s.draft
	if d.k == 0 || s.stepMask(s.mask) != nil {
		return nil
	}
	room := s.rt.cfg.MaxModelLen - len(d.tokens) - 1
	if s.new.MaxTokens > 0 {
		room = min(room, s.new.MaxTokens-s.generated-1)
	}
	draft := d.ngram.Propose(nil, d.tokens, min(d.k, room))
	if len(draft) < d.least {
		return nil
	}
	return draft
}
