package sched

import (
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

// harness drives a Scheduler and a simulated device and records a trace:
//
//	step 3: A[8:9]* B[0:6] | preempt C(swap) | out 4>0 5>1 | in 0>4 | resume D => A=101
//
// is a step computing A's token 8 with logits and B's tokens 0..5, which
// preempted C by swapping device blocks 4 and 5 to host blocks 0 and 1, and
// swapped D in; Done gave A token 101 (a Done's outcomes go on the line of
// its step). A finished sequence shows (stop) or (len). By default sampled
// tokens are 100+outputs so far (the simulated device still checks every K/V
// it reads), and every sequence that got a token is Ready again at once.
// Every Schedule, Done, Fail and Finish is followed by check and, for a plan,
// checkPlan.
type harness struct {
	t      testing.TB
	s      *Scheduler
	dev    *device
	names  map[kv.SeqID]string
	seqs   map[string]*Seq // by name, finished ones too
	nextID kv.SeqID
	eos    int32
	// modelTokens samples the fake model's tokens instead of 100+outputs.
	modelTokens bool
	// manualReady leaves Ready to the case's ready ops.
	manualReady bool
	lines       []string
	stepLine    int // the line of the plan in flight
	steps       int
	plan        *Plan
	sampled     []int32
	preempted   map[*Seq]bool // preempted and not resumed since
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, s: s, dev: newDevice(s.Config(), 1000), names: map[kv.SeqID]string{},
		seqs: map[string]*Seq{}, eos: -1, preempted: map[*Seq]bool{}}
}

func (h *harness) logf(format string, args ...any) {
	h.lines = append(h.lines, fmt.Sprintf(format, args...))
}

func (h *harness) check() {
	h.t.Helper()
	if err := check(h.s, h.dev); err != nil {
		h.t.Fatalf("%v\ntrace:\n%s", err, h.tail())
	}
}

func (h *harness) last() string {
	if len(h.lines) == 0 {
		return ""
	}
	return h.lines[len(h.lines)-1]
}

// tail is the end of the trace, for failure messages.
func (h *harness) tail() string { return strings.Join(h.lines[max(0, len(h.lines)-20):], "\n") }

func (h *harness) seq(name string) *Seq {
	h.t.Helper()
	q := h.seqs[name]
	if q == nil {
		h.t.Fatalf("no sequence %s", name)
	}
	return q
}

func (h *harness) add(name string, prompt []int32, maxTokens, priority int) (*Seq, error) {
	id := h.nextID // a name added again keeps its id
	if q, ok := h.seqs[name]; ok {
		id = q.ID
	} else {
		h.nextID++
	}
	q, err := h.s.Add(id, prompt, maxTokens, priority)
	if err == nil {
		h.names[id], h.seqs[name] = name, q
	}
	return q, err
}

// schedule plans a step and runs it on the device; it reports whether there
// was one.
func (h *harness) schedule() bool {
	h.t.Helper()
	h.steps++
	was := map[*Seq]Seq{}
	var decoders []*Seq
	for _, q := range h.s.seqs {
		was[q] = *q
		if q.Status == Running && q.Ready && len(q.Tokens)-q.NumComputed == 1 {
			decoders = append(decoders, q)
		}
	}
	p := h.s.Schedule()
	if p == nil {
		h.logf("step %d: idle", h.steps)
		h.check()
		return false
	}
	if err := h.checkPlan(p, was, decoders); err != nil {
		h.t.Fatalf("step %d: %v\ntrace:\n%s", h.steps, err, h.tail())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "step %d:", h.steps)
	for _, c := range p.Chunks {
		fmt.Fprintf(&b, " %s[%d:%d]", h.names[c.Seq.ID], c.Start, c.End)
		if c.Logits {
			b.WriteByte('*')
		}
	}
	if len(p.Preempted) > 0 {
		b.WriteString(" | preempt")
		for _, q := range p.Preempted {
			mode := Recompute
			if q.Status == Swapped {
				mode = Swap
			}
			fmt.Fprintf(&b, " %s(%v)", h.names[q.ID], mode)
		}
	}
	for _, l := range []struct {
		what   string
		copies []messages.BlockCopy
	}{{"out", p.SwapOut}, {"in", p.SwapIn}} {
		if len(l.copies) > 0 {
			fmt.Fprintf(&b, " | %s", l.what)
			for _, c := range l.copies {
				fmt.Fprintf(&b, " %d>%d", c.Src, c.Dst)
			}
		}
	}
	if len(p.Resumed) > 0 {
		b.WriteString(" | resume")
		for _, q := range p.Resumed {
			fmt.Fprintf(&b, " %s", h.names[q.ID])
		}
	}
	h.stepLine = len(h.lines)
	h.lines = append(h.lines, b.String())
	sampled, err := h.dev.run(h.s, p)
	if err != nil {
		h.t.Fatalf("device: %v\ntrace:\n%s", err, h.tail())
	}
	if !h.modelTokens {
		r := 0
		for _, c := range p.Chunks {
			if c.Logits {
				sampled[r] = int32(100 + c.Seq.NumOutput())
				r++
			}
		}
	}
	h.plan, h.sampled = p, sampled
	h.check()
	return true
}

// done completes the plan in flight and appends its outcomes to the trace.
func (h *harness) done() []Outcome {
	h.t.Helper()
	out := h.s.Done(h.sampled, func(_ *Seq, tok int32) bool { return tok == h.eos }, nil)
	h.plan = nil
	var b strings.Builder
	for _, o := range out {
		fmt.Fprintf(&b, " %s=%d", h.names[o.Seq.ID], o.Token)
		switch o.Finish {
		case messages.FinishStop:
			b.WriteString("(stop)")
		case messages.FinishLength:
			b.WriteString("(len)")
		}
		if o.Finish == "" && !h.manualReady {
			h.s.Ready(o.Seq.ID)
		}
	}
	if b.Len() > 0 {
		h.lines[h.stepLine] += " =>" + b.String()
	}
	h.check()
	return out
}

func (h *harness) fail() {
	h.t.Helper()
	h.dev.lose()
	ready := map[*Seq]bool{} // the plan's sequences that are not finished, and their Ready
	for _, c := range h.plan.Chunks {
		if c.Seq.Status != Finished {
			ready[c.Seq] = true
		}
	}
	for _, q := range h.plan.Preempted {
		if q.Status != Finished {
			ready[q] = q.Ready
		}
	}
	requeued := h.s.Fail()
	if len(requeued) != len(ready) {
		h.t.Fatalf("Fail requeued %d sequences of %d", len(requeued), len(ready))
	}
	for _, q := range requeued {
		if r, ok := ready[q]; !ok || q.Ready != r {
			h.t.Fatalf("Fail requeued %s, ready %v (was %v, in the plan %v)", h.names[q.ID], q.Ready, r, ok)
		}
		if q.Status != Waiting || q.NumComputed != 0 || q.host != nil {
			h.t.Fatalf("Fail requeued %s as %v with %d computed", h.names[q.ID], q.Status, q.NumComputed)
		}
		if q.admitted { // the batcher tells it Preempted
			h.preempted[q] = true
		}
	}
	h.plan = nil
	var names []string
	for _, q := range requeued {
		names = append(names, h.names[q.ID])
	}
	h.logf("fail: requeue %s", strings.Join(names, " "))
	h.check()
}

// drain runs steps with every sequence ready until none is left, and checks
// that every block is free then.
func (h *harness) drain(maxSteps int) {
	h.t.Helper()
	if h.plan != nil {
		h.done()
	}
	for i := 0; !h.s.Idle(); i++ {
		if i == maxSteps {
			h.t.Fatalf("%d sequences left after %d steps (livelock?): %s", h.s.Load(), maxSteps, h.last())
		}
		for id := range h.s.seqs {
			h.s.Ready(id)
		}
		if h.schedule() {
			h.done()
		}
	}
	h.checkAllFree()
}

func (h *harness) checkAllFree() {
	h.t.Helper()
	s := h.s
	if !s.Idle() || len(s.running) > 0 || len(s.waiting) > 0 ||
		s.blocks.NumFreeBlocks() != s.cfg.NumBlocks || s.blocks.Stats().NumSeqs != 0 ||
		s.host.NumFree() != s.cfg.NumHostBlocks {
		h.t.Fatalf("not all free: %d seqs, %d/%d blocks free, %d/%d host blocks free",
			s.Load(), s.blocks.NumFreeBlocks(), s.cfg.NumBlocks, s.host.NumFree(), s.cfg.NumHostBlocks)
	}
}
