package sched

import "github.com/troupe-llm/troupe/messages"

// Outcome is what a step gave one sequence that asked for logits.
type Outcome struct {
	Seq    *Seq
	Token  int32
	Finish string // "", messages.FinishStop (the last token not appended) or messages.FinishLength
	// Row is the first of the sequence's sample rows, N the tokens of its
	// run (rows Row..Row+N-1; 1 without a draft), Accepted the draft
	// tokens accepted among them, of Drafted verified.
	Row, N, Drafted, Accepted int
}

// Done records the plan in flight as computed. sampled holds one token per
// logits row, in plan order: one per chunk with Logits, and one more per
// draft token (Chunk.Draft); stop says whether a token ends its sequence
// (an end-of-generation or stop token). Each such sequence gets the token
// appended (unless it stops), loses Ready until Ready is called, and is
// finished and freed when it stops or reaches MaxLen. A chunk with a draft
// gives its sequence a run of tokens: its samples in order, for as long as
// each equals the draft token computed after it (accepted); the first that
// differs, or the one after the last draft token, ends the run. Chunks of
// sequences finished meanwhile are skipped. Outcomes are appended to out.
func (s *Scheduler) Done(sampled []int32, stop func(q *Seq, tok int32) bool, out []Outcome) []Outcome {
	p := s.endPlan()
	r := 0
	for _, c := range p.Chunks {
		row := r
		if c.Logits {
			r += 1 + c.Draft
		}
		q := c.Seq
		if q.Status != Running {
			continue // finished (cancelled) while in flight
		}
		q.NumComputed = c.End
		if !c.Logits {
			s.freeBehindWindow(q)
			continue
		}
		o := Outcome{Seq: q, Token: sampled[row], Row: row}
		s.verify(c, sampled[row:r], stop, &o)
		s.freeBehindWindow(q)
		q.Ready = false
		if o.Finish != "" {
			s.drop(q)
		}
		out = append(out, o)
	}
	return out
}

// Fail records that the plan in flight was lost (its device failed): every
// sequence in it is re-queued to be recomputed, ready, and the prefix cache
// is reset, since blocks registered for the lost step hold nothing. Victims
// swapped out by the plan are recomputed too, in case the copy was lost;
// they keep their Ready. A sequence the plan admitted for the first time is
// admitted as new again (not Resumed, NumCachedTokens looked up again). It
// returns the sequences re-queued.
func (s *Scheduler) Fail() []*Seq {
	p := s.endPlan()
	var requeued []*Seq
	requeue := func(q *Seq, ready bool) {
		switch q.Status {
		case Finished:
			return
		case Running:
			s.running = remove(s.running, q)
			_ = s.blocks.Free(q.ID)
			s.waiting = insertSorted(s.waiting, q)
		case Swapped:
			s.host.Release(q.host)
			q.host = nil
		}
		q.Status, q.NumComputed, q.Ready = Waiting, 0, q.Ready || ready
		requeued = append(requeued, q)
	}
	for _, c := range p.Chunks {
		requeue(c.Seq, true)
	}
	for _, q := range p.Preempted {
		requeue(q, false)
	}
	for _, q := range p.admitted {
		q.admitted, q.NumCachedTokens = false, 0
	}
	s.blocks.ResetPrefixCache()
	return requeued
}

func (s *Scheduler) endPlan() *Plan {
	if !s.inFlight {
		panic("sched: no plan in flight")
	}
	s.inFlight = false
	p := &s.plan
	for _, h := range p.hostRelease {
		s.host.Release(h)
	}
	p.hostRelease = p.hostRelease[:0]
	return p
}

// Stats adds the scheduler's state and counters to st.
func (s *Scheduler) Stats(st *messages.Stats) {
	for _, q := range s.waiting {
		if q.Status == Swapped {
			st.Swapped++
		} else {
			st.Waiting++
		}
	}
	st.Running += len(s.running)
	b := s.blocks.Stats()
	st.NumBlocks += b.NumBlocks
	st.NumFreeBlocks += b.NumFreeBlocks
	st.NumCachedBlocks += b.NumCachedBlocks
	st.WindowFreedBlocks += b.WindowFreed
	st.PrefixQueries += b.PrefixQueries
	st.PrefixHits += b.PrefixHits
	st.Preemptions += s.preemptions
	st.SwapOuts += s.swapOuts
	st.SwapIns += s.swapIns
	st.Rejected += s.rejected
	s.specStatsTo(st)
	st.HostBlocks += s.cfg.NumHostBlocks
	st.FreeHostBlocks += s.host.NumFree()
	if st.NumBlocks > 0 {
		st.KVCacheUsage = 1 - float64(st.NumFreeBlocks)/float64(st.NumBlocks)
	}
}

// BlockTable returns the device block table of a running sequence; see
// kv.BlockManager.BlockTable for how long it stays valid.
func (s *Scheduler) BlockTable(q *Seq) []int32 { return s.blocks.BlockTable(q.ID) }

// NumCachedTokens returns how many leading tokens of tokens the prefix cache
// holds now under salt (for placing a sequence on the device that has its
// prefix).
func (s *Scheduler) NumCachedTokens(salt uint64, tokens []int32) int {
	return s.blocks.NumCachedTokens(salt, tokens)
}

// Load is the number of sequences the scheduler holds.
func (s *Scheduler) Load() int { return len(s.seqs) }
