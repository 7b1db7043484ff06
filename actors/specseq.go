package actors

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors/spec"
	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/messages"
)

// draftState is a sequence's side of speculative decoding: its tokens so
// far and its proposer. k 0: the sequence does not speculate.
type draftState struct {
	k, least int        // most and fewest draft tokens per step
	cur      int        // the draft length now, in [least, k]: adapted to the recent acceptance
	ngram    spec.NGram // the proposer
	tokens   []int32    // prompt, then the tokens output so far
	prompt   int        // the prompt's length in tokens
	// device drafts with a draft model instead of ngram (SpecDraft), for
	// the sequence id, stopping below pMin.
	device  *actor.PID // the draft device; nil: n-gram
	id      uint64
	pMin    float32
	waiting bool // a draft ask is in flight
	// sent is the length of the draft the last step request carried;
	// skip, the steps to go without asking the draft device, and backoff
	// the last such pause (backOff).
	sent, skip, backoff int
	// look is 1 when the draft model samples (a sampled request, with a q
	// for rejection sampling): each draft carries one token more than the
	// step may verify, the look-ahead, which the run's last row verifies
	// (see takeDraft), so every position the draft model reaches is
	// verified against its q wherever the steps' runs end.
	look int
	// pre is the sequence's preemption count when it sent its last step
	// request: a draft a preemption dropped is no reason to back off.
	pre, lastBackoff int
	// busy: the last step result said the device verifies no draft now
	// (StepResult.NoDraft: more sequences run than SpecMaxSeqs), so the
	// sequence proposes none, asks its draft model for none (not even the
	// look-ahead) and steps as plain decoding until a result says otherwise.
	busy bool
	// misses counts the draft model's drafts in a row of which no token
	// was accepted: from the second, the sequence skips asking for 1, 2,
	// 4 ... (at most maxDraftBackOff) steps, since a draft pass and a
	// verified row that are thrown away cost more than they save.
	misses int
}

// newDraftState is the draft state of sequence id of req, off when the
// runtime or the request does not speculate.
func newDraftState(rt *Runtime, req *messages.GenerateRequest, id uint64) draftState {
	k, least := rt.draftLimits(req)
	if k == 0 {
		return draftState{}
	}
	d := draftState{k: k, least: least, cur: k, ngram: rt.cfg.Speculative.NGram, tokens: slices.Clone(req.Prompt), prompt: len(req.Prompt),
		device: rt.draftDevice, id: id, pMin: rt.cfg.Speculative.DraftPMin}
	if req.Speculative != nil && req.Speculative.PMin != 0 {
		d.pMin = req.Speculative.PMin
	}
	if d.device != nil && !req.Sampling.Infill && SampleParams(&req.Sampling).HasDist() {
		d.look = 1
	}
	return d
}

// release gives back what the proposer holds for the sequence (its draft
// model's KV blocks); the sequence has ended. It may be called again.
func (d *draftState) release(ctx actor.Context) {
	if d.device != nil {
		ctx.Send(d.device, &draftRelease{ID: d.id})
	}
}

// next asks for the sequence's next step. With a draft model it asks the
// draft device first; the step request follows its reply (onDraft).
func (s *sequence) next(ctx actor.Context) {
	d := &s.draft
	if d.busy {
		s.step(ctx, nil, nil)
		return
	}
	k := s.draftLen()
	if d.device != nil {
		if d.skip > 0 && s.preemptions != d.pre { // preempted, not dropped
			d.skip, d.backoff = 0, d.lastBackoff
		}
		look := d.look
		if d.k == 0 || s.budget != nil {
			look = 0
		}
		if d.skip > 0 { // backing off: only the look-ahead, one cheap pass
			d.skip, k = d.skip-1, 0
		}
		if k+look > 0 {
			d.waiting = true
			ctx.Request(d.device, &draftAsk{ID: s.id, Tokens: d.tokens, K: k + look, PMin: d.pMin,
				Params: &s.new.Sampling, Draw: uint64(len(d.tokens) - d.prompt)})
			return
		}
	}
	var draft []int32
	if k > 0 && d.device == nil {
		draft = d.ngram.Propose(nil, d.tokens, k)
	}
	s.step(ctx, draft, nil)
}

// maxDraftBackOff bounds how many steps a sequence with a draft model goes
// without asking for a draft after the scheduler dropped one.
const maxDraftBackOff = 32

// backOff follows whether the scheduler verified the last draft sent: it
// drops drafts while more than SpecMaxSeqs sequences run (or the token
// budget leaves no room), and a draft model's draft costs its forward
// passes, so a sequence whose draft was dropped skips asking for 1, 2, 4,
// ... (at most maxDraftBackOff) steps; a verified draft ends the back-off.
func (d *draftState) backOff(drafted int) {
	sent := d.sent
	d.sent = 0
	switch {
	case drafted > 0:
		d.backoff = 0
	case sent > 0:
		d.lastBackoff = d.backoff
		d.backoff = min(max(1, 2*d.backoff), maxDraftBackOff)
		d.skip = d.backoff
	}
}

// onDraft takes the draft device's reply (nil: a dead letter, the device
// is gone) and sends the step request with its draft.
func (s *sequence) onDraft(ctx actor.Context, r *draftReply) {
	if s.done || !s.draft.waiting {
		return
	}
	s.draft.waiting = false
	var draft []int32
	var q []messages.DraftDist
	if r != nil {
		draft, q = r.Draft, r.Q
	}
	s.step(ctx, draft, q)
}

// step sends the step request with draft, once the masks allow it, and
// the distributions q its tokens were drawn from (nil: none, verified as
// one-hot). With q the draft ends with the look-ahead token, and when the
// rest is shorter than n_min only the look-ahead goes. A masked sequence
// sends no q: its masks cut the draft at a token they forbid, a choice that
// depends on the token drawn, which the rejection rule's exactness does
// not allow (the one-hot rule's does).
func (s *sequence) step(ctx actor.Context, draft []int32, q []messages.DraftDist) {
	if len(q) == len(draft) && len(draft) > 0 && s.fsm == nil && s.generated >= s.minTokens {
		// Drawn from q: the last token is the look-ahead (see draftState.look).
		n := len(draft) - 1
		if n < s.draft.least {
			n = 0
		}
		s.draft.sent, s.draft.pre = n, s.preemptions
		ctx.Request(s.batcher, &messages.StepRequest{SeqID: s.id, Mask: s.stepMask(s.mask),
			Draft: draft[:n+1], DraftQ: q[:n+1]})
		return
	}
	if len(q) == len(draft) && s.draft.look > 0 && len(draft) > 0 {
		draft = draft[:len(draft)-1] // a masked sequence's look-ahead goes
	}
	draft, masks := s.vetDraft(draft)
	s.draft.sent, s.draft.pre = len(draft), s.preemptions
	ctx.Request(s.batcher, &messages.StepRequest{SeqID: s.id, Mask: s.stepMask(s.mask), Draft: draft, DraftMasks: masks})
}

// adapt sets the next draft length from a verified draft's outcome (and
// notes whether the device verifies drafts now, busy: see draftState.busy): a
// draft wholly accepted doubles it (up to k), a rejection sets it to one
// more than was accepted (at least least), so the rows a step verifies in
// vain stay few while the proposer is wrong.
func (d *draftState) adapt(drafted, accepted int, busy bool) {
	if d.busy = busy && d.k > 0; d.busy {
		d.sent = 0 // dropped for the load, which busy follows: no back-off
	}
	d.backOff(drafted)
	switch {
	case drafted == 0:
	case accepted == drafted:
		d.cur, d.misses = min(d.k, 2*d.cur), 0
	default:
		d.cur = max(d.least, accepted+1)
		if accepted > 0 || d.device == nil {
			d.misses = 0
		} else if d.misses++; d.misses >= 2 {
			d.skip = min(1<<min(d.misses-2, 5), maxDraftBackOff)
		}
	}
}

// record adds an output token.
func (d *draftState) record(tok int32) {
	if d.k > 0 {
		d.tokens = append(d.tokens, tok)
	}
}

// draftLen is how many draft tokens the sequence's next step may carry
// (0: none): the adapted length, within the room the context and
// max_tokens leave. A sequence with a reasoning budget does not draft (the
// budget's forced tokens would need its state per position).
func (s *sequence) draftLen() int {
	d := &s.draft
	if d.k == 0 || s.budget != nil {
		return 0
	}
	room := s.rt.cfg.MaxModelLen - len(d.tokens) - 1
	if s.new.MaxTokens > 0 {
		room = min(room, s.new.MaxTokens-s.generated-1)
	}
	return min(d.cur, room)
}

// vetDraft returns the draft to send with the sequence's next step
// request (nil: none), dropped when shorter than least. A masked sequence
// (a grammar, min_tokens) proposes only the tokens its masks allow, with
// the mask of each sample after the first (see StepRequest.DraftMasks).
func (s *sequence) vetDraft(draft []int32) ([]int32, [][]uint64) {
	var masks [][]uint64
	if len(draft) > 0 && (s.fsm != nil || s.generated < s.minTokens) {
		draft, masks = s.checkDraft(draft)
	}
	if len(draft) < s.draft.least || len(draft) == 0 {
		return nil, nil
	}
	return draft, masks
}

// checkDraft returns the longest start of draft whose tokens the
// sequence's masks allow, a grammar's matcher going over it on a clone,
// and the mask of the sample after each of those tokens. A token that
// ends the grammar ends the draft before it.
func (s *sequence) checkDraft(draft []int32) ([]int32, [][]uint64) {
	var m *grammar.Matcher
	if s.fsm != nil {
		m = s.fsm.m.Clone()
	}
	mask := s.stepMask(s.mask)
	masks := make([][]uint64, 0, len(draft))
	for j, tok := range draft {
		if mask != nil && (int(tok>>6) >= len(mask) || mask[tok>>6]&(1<<(tok&63)) == 0) {
			return draft[:j], masks
		}
		var gm []uint64
		if m != nil {
			if err := m.Accept(tok); err != nil || m.Done() {
				return draft[:j], masks
			}
			var err error
			if gm, err = s.fsm.maskOf(m); err != nil {
				return draft[:j], masks
			}
		}
		mask = s.maskAt(gm, s.generated+j+1)
		masks = append(masks, mask)
	}
	return draft, masks
}
