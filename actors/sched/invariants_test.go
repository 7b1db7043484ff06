package sched

import (
	"fmt"
	"slices"

	"github.com/troupe-llm/troupe/kv"
)

// check returns the first broken invariant of s, with the device's content:
//   - every sequence is in the list of its status, once; lists are sorted;
//   - a running sequence holds a table covering NumComputed tokens between
//     steps (at least that many with a plan in flight), and the device holds
//     the K/V of those tokens; with a window, exactly the blocks wholly
//     before kv.WindowStart(NumComputed) are freed, and only the K/V from
//     there on is held; waiting ones hold nothing;
//   - a swapped sequence holds host blocks for NumComputed tokens with their
//     K/V, no host block is held twice, and the host pool counts the rest;
//   - a device block is held by two tables only as the same full block of
//     the same prefix, and held plus free blocks are all blocks.
func check(s *Scheduler, d *device) error {
	if err := checkLists(s); err != nil {
		return err
	}
	held := map[int32]blockHolder{}
	hostHeld := map[int32]bool{}
	for id, q := range s.seqs {
		if q.ID != id {
			return fmt.Errorf("seq %d known as %d", q.ID, id)
		}
		if len(q.Tokens) >= q.MaxLen || q.MaxLen > s.cfg.MaxModelLen || q.PromptLen < 1 {
			return fmt.Errorf("seq %d: %d tokens, max len %d, prompt %d", id, len(q.Tokens), q.MaxLen, q.PromptLen)
		}
		table := s.blocks.BlockTable(id)
		var err error
		switch q.Status {
		case Running:
			err = checkRunning(s, d, q, table, held)
		case Waiting, Swapped:
			err = checkWaiting(s, d, q, table, hostHeld)
		default:
			err = fmt.Errorf("seq %d known but %v", id, q.Status)
		}
		if err != nil {
			return err
		}
	}
	if len(held)+s.blocks.NumFreeBlocks() != s.cfg.NumBlocks {
		return fmt.Errorf("%d blocks held + %d free != %d", len(held), s.blocks.NumFreeBlocks(), s.cfg.NumBlocks)
	}
	pending := 0
	for _, h := range s.plan.hostRelease {
		pending += len(h) - kv.NumFreed(h)
	}
	if len(hostHeld)+pending+s.host.NumFree() != s.cfg.NumHostBlocks {
		return fmt.Errorf("%d host blocks held + %d to release + %d free != %d",
			len(hostHeld), pending, s.host.NumFree(), s.cfg.NumHostBlocks)
	}
	return nil
}

// checkLists checks the running and waiting lists' sizes and order.
func checkLists(s *Scheduler) error {
	if len(s.running) > s.cfg.MaxNumSeqs {
		return fmt.Errorf("%d running > max_num_seqs %d", len(s.running), s.cfg.MaxNumSeqs)
	}
	for _, l := range [][]*Seq{s.running, s.waiting} {
		for i := 1; i < len(l); i++ {
			if !before(l[i-1], l[i]) {
				return fmt.Errorf("seq %d listed before seq %d", l[i-1].ID, l[i].ID)
			}
		}
	}
	if n := len(s.running) + len(s.waiting); n != len(s.seqs) || s.Load() != n {
		return fmt.Errorf("%d running + %d waiting, %d known", len(s.running), len(s.waiting), len(s.seqs))
	}
	return nil
}

// blockHolder is the first table seen holding a device block: its
// sequence and the block's index in it.
type blockHolder struct {
	q *Seq
	i int
}

// checkRunning checks a running sequence's table and the K/V the device
// holds for it, recording the blocks it holds in held.
func checkRunning(s *Scheduler, d *device, q *Seq, table []int32, held map[int32]blockHolder) error {
	bs, id := s.cfg.BlockSize, q.ID
	if slices.Index(s.running, q) < 0 {
		return fmt.Errorf("seq %d running, not in the running list", id)
	}
	n := s.blocks.NumTokens(id)
	if (!s.inFlight && q.NumComputed < 1) || q.NumComputed >= len(q.Tokens) ||
		n < q.NumComputed || (!s.inFlight && n != q.NumComputed) || q.host != nil {
		return fmt.Errorf("seq %d running: %d of %d tokens computed, table covers %d, in flight %v",
			id, q.NumComputed, len(q.Tokens), n, s.inFlight)
	}
	from := kv.WindowStart(q.NumComputed, s.cfg.Window)
	if dead := kv.NumFreed(table); dead != from/bs || slices.Contains(table[dead:], kv.NoBlock) {
		return fmt.Errorf("seq %d running with %d computed, window %d: %d blocks freed of %v, want %d",
			id, q.NumComputed, s.cfg.Window, dead, table, from/bs)
	}
	vals := make([]uint64, q.NumComputed)
	for pos := from; pos < len(vals); pos++ {
		vals[pos] = d.read(table, pos)
	}
	if err := d.verify(id, q.Tokens[:q.NumComputed], vals, from, "running"); err != nil {
		return err
	}
	for i, b := range table {
		if b == kv.NoBlock {
			continue
		}
		h, ok := held[b]
		if !ok {
			held[b] = blockHolder{q, i}
			continue
		}
		end := (i + 1) * bs
		if h.i != i || n < end || s.blocks.NumTokens(h.q.ID) < end ||
			!slices.Equal(q.Tokens[:end], h.q.Tokens[:end]) {
			return fmt.Errorf("block %d: #%d of seq %d and #%d of seq %d", b, i, id, h.i, h.q.ID)
		}
	}
	return nil
}

// checkWaiting checks a waiting or swapped sequence; a swapped one's host
// blocks and their K/V, recorded in hostHeld.
func checkWaiting(s *Scheduler, d *device, q *Seq, table []int32, hostHeld map[int32]bool) error {
	bs, id := s.cfg.BlockSize, q.ID
	if slices.Index(s.waiting, q) < 0 || table != nil {
		return fmt.Errorf("seq %d %v: not waiting, or holds %v", id, q.Status, table)
	}
	if q.Status == Waiting && (q.NumComputed != 0 || q.host != nil) {
		return fmt.Errorf("seq %d waiting with %d computed, host %v", id, q.NumComputed, q.host)
	}
	if q.Status != Swapped {
		return nil
	}
	if q.NumComputed < 1 || len(q.host) != (q.NumComputed+bs-1)/bs {
		return fmt.Errorf("seq %d swapped: %d computed in host blocks %v", id, q.NumComputed, q.host)
	}
	from, dead := kv.WindowStart(q.NumComputed, s.cfg.Window), kv.NumFreed(q.host)
	if dead != from/bs || slices.Contains(q.host[dead:], kv.NoBlock) {
		return fmt.Errorf("seq %d swapped with %d computed, window %d: host table %v, want %d freed",
			id, q.NumComputed, s.cfg.Window, q.host, from/bs)
	}
	vals := make([]uint64, q.NumComputed)
	for pos := from; pos < len(vals); pos++ {
		vals[pos] = d.host[q.host[pos/bs]][pos%bs]
	}
	if err := d.verify(id, q.Tokens[:q.NumComputed], vals, from, "swapped"); err != nil {
		return err
	}
	for _, h := range q.host[dead:] {
		if hostHeld[h] {
			return fmt.Errorf("host block %d held twice", h)
		}
		hostHeld[h] = true
	}
	return nil
}

// checkPlan returns the first thing wrong with plan p, given the sequences
// as they were before Schedule and the ready decoders then.
func (h *harness) checkPlan(p *Plan, was map[*Seq]Seq, decoders []*Seq) error {
	s := h.s
	if n := p.NumTokens(); n > s.cfg.MaxNumBatchedTokens {
		return fmt.Errorf("%d tokens > max_num_batched_tokens %d", n, s.cfg.MaxNumBatchedTokens)
	}
	inPlan := map[*Seq]bool{}
	admitted := false
	for _, c := range p.Chunks {
		q, w := c.Seq, was[c.Seq]
		switch {
		case inPlan[q]:
			return fmt.Errorf("seq %d has two chunks", q.ID)
		case !w.Ready || q.Status != Running || c.Start >= c.End || c.Start != q.NumComputed ||
			c.Logits != (c.End == len(q.Tokens)):
			return fmt.Errorf("seq %d (was %v, ready %v): chunk %+v of %d tokens", q.ID, w.Status, w.Ready,
				c, len(q.Tokens))
		case w.Status == Running && c.Start != w.NumComputed,
			w.Status == Swapped && c.Start < w.NumComputed,
			w.Status == Waiting && c.Start%s.cfg.BlockSize != 0:
			return fmt.Errorf("seq %d was %v with %d computed: chunk from %d", q.ID, w.Status, w.NumComputed, c.Start)
		}
		inPlan[q] = true
		admitted = admitted || w.Status != Running
	}
	if len(p.Preempted) > 0 && admitted {
		return fmt.Errorf("a step that preempted admitted a sequence")
	}
	swappedOut := 0
	for _, q := range p.Preempted {
		if was[q].Status != Running || inPlan[q] || (q.Status != Waiting && q.Status != Swapped) {
			return fmt.Errorf("seq %d (was %v) preempted as %v", q.ID, was[q].Status, q.Status)
		}
		if q.Status == Swapped {
			swappedOut += len(q.host) - kv.NumFreed(q.host)
		}
		h.preempted[q] = true
	}
	if swappedOut != len(p.SwapOut) {
		return fmt.Errorf("%d blocks swapped out for victims holding %d host blocks", len(p.SwapOut), swappedOut)
	}
	for _, q := range p.Resumed {
		if !h.preempted[q] || !inPlan[q] {
			return fmt.Errorf("seq %d resumed, not preempted before", q.ID)
		}
		delete(h.preempted, q)
	}
	for q := range inPlan {
		if h.preempted[q] && was[q].Status != Running {
			return fmt.Errorf("seq %d resumed, not in Resumed", q.ID)
		}
	}
	if len(decoders) <= s.cfg.MaxNumBatchedTokens {
		for _, q := range decoders {
			if q.Status == Running && !inPlan[q] {
				return fmt.Errorf("decoding seq %d stalls", q.ID)
			}
		}
	}
	return nil
}
