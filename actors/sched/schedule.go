package sched

import (
	"fmt"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

// Schedule plans the next step from the ready sequences; it returns nil when
// there is nothing to run and nothing changed. A plan can have no chunks:
// only preemptions to report (a sequence that preempted itself behind others
// that are not ready) and their swap-outs. The plan stays the scheduler's:
// read it, then call Done or Fail before the next Schedule.
func (s *Scheduler) Schedule() *Plan {
	if s.inFlight {
		panic("sched: Schedule with a plan in flight")
	}
	p := &s.plan
	*p = Plan{SwapOut: p.SwapOut[:0], SwapIn: p.SwapIn[:0], Chunks: p.Chunks[:0],
		Preempted: p.Preempted[:0], Resumed: p.Resumed[:0], hostRelease: p.hostRelease[:0],
		admitted: p.admitted[:0]}
	budget := s.cfg.MaxNumBatchedTokens
	s.step++ // Seq.step == s.step marks the sequences scheduled in this step

	// Running sequences: decode steps and the next chunks of prompts.
	for i := 0; i < len(s.running) && budget > 0; i++ {
		q := s.running[i]
		if !q.Ready {
			continue
		}
		// A decode computes one token; a prompt chunk takes what the decoders
		// after it leave of the budget, so a long prompt never stalls them.
		n := len(q.Tokens) - q.NumComputed
		if n > 1 {
			n = min(n, budget-s.decodersAfter(i))
			if len(q.Spans) > 0 {
				n = q.cut(q.NumComputed, q.NumComputed+n, s.cfg.MaxNumBatchedTokens) - q.NumComputed
			}
			if n < 1 {
				continue
			}
		}
		for !s.blocks.CanAppendTokens(q.ID, n) {
			v := s.victim()
			s.preempt(v, p)
			if v == q {
				i-- // q left s.running; the next sequence moved to index i
				break
			}
		}
		if q.Status != Running {
			continue
		}
		if err := s.blocks.AppendTokens(q.ID, q.Tokens[q.NumComputed:q.NumComputed+n]); err != nil {
			panic(fmt.Sprintf("sched: append after CanAppendTokens: %v", err)) // broken invariant
		}
		s.addChunk(p, q, q.NumComputed, q.NumComputed+n)
		q.step = s.step
		budget -= n
		if n == 1 && len(q.Draft) > 0 {
			budget -= s.scheduleDraft(p, q, budget-s.decodersAfter(i))
		}
	}

	// Waiting sequences, unless this step had to preempt.
	for i := 0; len(p.Preempted) == 0 && i < len(s.waiting) && budget > 0 && len(s.running) < s.cfg.MaxNumSeqs; i++ {
		q := s.waiting[i]
		if !q.Ready {
			continue
		}
		if !s.admit(q, p, budget) {
			break // FCFS: no one behind it jumps the queue
		}
		s.waiting = remove(s.waiting, q)
		i--
		s.running = insertSorted(s.running, q)
		c := p.Chunks[len(p.Chunks)-1]
		budget -= c.End - c.Start
	}
	if len(p.Chunks) == 0 && len(p.Preempted) == 0 {
		return nil
	}
	s.inFlight = true
	return p
}

// decodersAfter counts the ready running sequences after s.running[i] that
// decode (one token to compute): a prompt chunk before them leaves them a
// token each of the budget.
func (s *Scheduler) decodersAfter(i int) int {
	n := 0
	for _, q := range s.running[i+1:] {
		if q.Ready && len(q.Tokens)-q.NumComputed == 1 {
			n++
		}
	}
	return n
}

// victim returns the running sequence to preempt: the lowest priority, then
// the newest, among those not already scheduled in this step. One always
// exists, because the sequence asking for blocks is a candidate.
func (s *Scheduler) victim() *Seq {
	for i := len(s.running) - 1; i >= 0; i-- {
		if q := s.running[i]; q.step != s.step {
			return q
		}
	}
	panic("sched: no preemption victim") // the asking sequence is running and unscheduled
}

// preempt takes q's device blocks: to the host tier in Swap mode when it
// has room, else by recompute.
func (s *Scheduler) preempt(q *Seq, p *Plan) {
	table := s.blocks.BlockTable(q.ID)
	s.running = remove(s.running, q)
	s.preemptions++
	if s.cfg.Preemption == Swap && q.NumComputed > 0 {
		// Blocks freed behind the window (leading kv.NoBlock) stay so in the
		// host table: only the live ones are copied.
		dead := kv.NumFreed(table)
		if host, err := s.host.Grow(table[:dead:dead], q.NumComputed, s.cfg.BlockSize); err == nil {
			for i, b := range table[dead:len(host)] {
				p.SwapOut = append(p.SwapOut, messages.BlockCopy{Src: b, Dst: host[dead+i]})
			}
			q.host, q.Status = host, Swapped
			s.swapOuts++
		}
	}
	if q.Status == Running {
		q.Status, q.NumComputed = Waiting, 0
	}
	_ = s.blocks.Free(q.ID) // after reading table
	s.waiting = insertSorted(s.waiting, q)
	p.Preempted = append(p.Preempted, q)
}

// admit gives waiting sequence q device blocks and its first chunk in p, if
// the blocks are there.
func (s *Scheduler) admit(q *Seq, p *Plan, budget int) bool {
	cached := 0
	if !q.NoPrefixCache {
		cached = s.blocks.NumCachedTokens(q.Salt, q.Tokens)
	}
	start := max(cached, q.NumComputed) // NumComputed > 0 only when Swapped
	n := min(len(q.Tokens)-start, budget)
	if q.Whole && start+n < len(q.Tokens) {
		return false
	}
	if len(q.Spans) > 0 {
		if n = q.cut(start, start+n, s.cfg.MaxNumBatchedTokens) - start; n < 1 {
			return false
		}
	}
	// Blocks wholly before the first computed token's window are left out
	// (hits there are not shared); a swapped sequence's host table has none
	// of them either.
	got, err, from := 0, error(nil), kv.WindowStart(start, s.cfg.Window)
	if q.NoPrefixCache {
		err = s.blocks.AllocateFresh(q.ID, q.Salt, q.Tokens, start+n, from)
	} else {
		got, err = s.blocks.AllocateFrom(q.ID, q.Salt, q.Tokens, start+n, from)
	}
	if err != nil {
		return false
	}
	if got != cached {
		panic(fmt.Sprintf("sched: seq %d: lookup found %d cached tokens, allocate %d", q.ID, cached, got))
	}
	if q.Status == Swapped {
		table := s.blocks.BlockTable(q.ID)
		for i := cached / s.cfg.BlockSize; i*s.cfg.BlockSize < q.NumComputed; i++ {
			if table[i] != kv.NoBlock {
				p.SwapIn = append(p.SwapIn, messages.BlockCopy{Src: q.host[i], Dst: table[i]})
			}
		}
		p.hostRelease = append(p.hostRelease, q.host)
		q.host = nil
		s.swapIns++
	}
	if q.admitted || q.Status == Swapped {
		p.Resumed = append(p.Resumed, q)
	} else {
		q.admitted, q.NumCachedTokens = true, min(cached, q.PromptLen)
		p.admitted = append(p.admitted, q)
	}
	q.Status, q.NumComputed = Running, start
	s.addChunk(p, q, start, start+n)
	return true
}

func (s *Scheduler) addChunk(p *Plan, q *Seq, start, end int) {
	p.Chunks = append(p.Chunks, Chunk{Seq: q, Start: start, End: end, Logits: end == len(q.Tokens)})
}
