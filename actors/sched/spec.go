package sched

import (
	"fmt"

	"github.com/troupe-llm/troupe/messages"
)

// specStats counts the drafts Done verified.
type specStats struct {
	drafts, draftTokens, accepted int64
	acceptedPerPos                []int64 // (longest draft) runs whose draft token i was accepted
}

// scheduleDraft adds decoding sequence q's draft to its chunk, the last of
// p, as far as budget, q's MaxLen and the free blocks allow, and returns
// the draft tokens added. A draft never preempts: it takes only free
// blocks, and none while more than SpecMaxSeqs sequences run.
func (s *Scheduler) scheduleDraft(p *Plan, q *Seq, budget int) int {
	d := min(len(q.Draft), budget, q.MaxLen-len(q.Tokens)-1)
	if s.SpecBusy() {
		d = 0
	}
	if d <= 0 || !s.blocks.CanAppendTokens(q.ID, d) {
		return 0
	}
	if err := s.blocks.AppendDraft(q.ID, q.Draft[:d]); err != nil {
		panic(fmt.Sprintf("sched: append draft after CanAppendTokens: %v", err)) // broken invariant
	}
	p.Chunks[len(p.Chunks)-1].Draft = d
	return d
}

// SpecBusy reports whether more than SpecMaxSeqs sequences run, so that
// the next plan verifies no draft.
func (s *Scheduler) SpecBusy() bool {
	return s.cfg.SpecMaxSeqs > 0 && len(s.running) > s.cfg.SpecMaxSeqs
}

// verify gives q the tokens of its chunk c's run, whose samples start at
// sampled[0]: each sample is appended (or ends q) in order, and the run
// goes on while the sample equals the draft token computed after it. It
// sets o's Finish, N and Accepted, gives back the slots of the rejected
// draft tokens, and sets NumComputed past the accepted ones.
func (s *Scheduler) verify(c Chunk, sampled []int32, stop func(q *Seq, tok int32) bool, o *Outcome) {
	q := c.Seq
	o.Drafted = c.Draft
	for i := 0; i <= c.Draft; i++ {
		tok := sampled[i]
		o.N++
		if stop(q, tok) {
			o.Finish = messages.FinishStop
			break
		}
		q.Tokens = append(q.Tokens, tok)
		if len(q.Tokens) >= q.MaxLen {
			o.Finish = messages.FinishLength
			break
		}
		if i == c.Draft || tok != q.Draft[i] {
			break
		}
		o.Accepted++
	}
	if c.Draft > 0 {
		if err := s.blocks.AcceptDraft(q.ID, o.Accepted); err != nil {
			panic(fmt.Sprintf("sched: running seq %d: %v", q.ID, err)) // broken invariant
		}
		q.NumComputed += o.Accepted
		s.countDraft(c.Draft, o.Accepted)
	}
	q.Draft = nil
}

func (s *Scheduler) countDraft(drafted, accepted int) {
	st := &s.spec
	st.drafts++
	st.draftTokens += int64(drafted)
	st.accepted += int64(accepted)
	for len(st.acceptedPerPos) < drafted {
		st.acceptedPerPos = append(st.acceptedPerPos, 0)
	}
	for i := range accepted {
		st.acceptedPerPos[i]++
	}
}

// specStatsTo adds the speculative counters to st.
func (s *Scheduler) specStatsTo(st *messages.Stats) {
	st.SpecDrafts += s.spec.drafts
	st.SpecDraftTokens += s.spec.draftTokens
	st.SpecAcceptedTokens += s.spec.accepted
	for len(st.SpecAcceptedPerPos) < len(s.spec.acceptedPerPos) {
		st.SpecAcceptedPerPos = append(st.SpecAcceptedPerPos, 0)
	}
	for i, n := range s.spec.acceptedPerPos {
		st.SpecAcceptedPerPos[i] += n
	}
}
