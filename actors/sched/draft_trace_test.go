package sched

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/datadriven"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

// TestDraftTrace replays the speculative-decoding traces of testdata/draft:
// each case is "run" with a configuration (4-token blocks, 8 blocks, a
// 32-token context unless changed) and the output limit of sequence 1,
// which starts past its prefill of 0..5 with token 100 sampled
// (decoding); a script of moves; and the trace they must leave. go test
// -rewrite updates the files (testdata/draft/README.md).
func TestDraftTrace(t *testing.T) {
	replay(t, "testdata/draft", traceRun{cfg: Config{MaxModelLen: 32, NumBlocks: 8, BlockSize: 4}}, func(t *testing.T, c *datadriven.Case, r traceRun) string {
		d := draftRun{t: t}
		d.s, d.q = decoding(t, r.cfg, r.maxTokens)
		var out []string
		for _, line := range c.Input {
			got, err := d.move(strings.Fields(line))
			if err != nil {
				t.Fatalf("%s: %q: %v", c.Pos, line, err)
			}
			if got != "" {
				out = append(out, got)
			}
		}
		return strings.Join(out, "\n")
	})
}

// draftRun is the state of a draft trace: the scheduler, sequence 1 and
// the plan in flight.
type draftRun struct {
	t    *testing.T
	s    *Scheduler
	q    *Seq
	plan *Plan
}

// move makes one move of a draft script and returns its trace line.
func (d *draftRun) move(w []string) (string, error) {
	s, q := d.s, d.q
	switch {
	case w[0] == "others" && len(w) == 2:
		// More decoding sequences, 10, 11, ..., past their prefill.
		n, err := strconv.Atoi(w[1])
		for i := range n {
			id := kv.SeqID(10 + i)
			if _, err := s.Add(id, toks(50, 3), 0, 0); err != nil {
				return "", err
			}
			s.Schedule()
			s.Done([]int32{7, 7, 7, 7}[:len(s.plan.Chunks)], func(*Seq, int32) bool { return false }, nil)
			s.Ready(1)
			s.Ready(id)
		}
		return "", err
	case w[0] == "draft" && len(w) == 2:
		p, err := datadriven.Tokens(w[1], "prompt")
		q.Draft = p
		return "", err
	case w[0] == "schedule" && len(w) == 1:
		d.plan = s.Schedule()
		var c Chunk
		for _, ch := range d.plan.Chunks {
			if ch.Seq == q {
				c = ch
			}
		}
		if c.Seq == nil {
			return "", fmt.Errorf("sequence 1 not scheduled: %+v", d.plan)
		}
		return fmt.Sprintf("schedule: 1[%d:%d] draft %d, %d chunks, %d preempted; table covers %d, %d free",
			c.Start, c.End, c.Draft, len(d.plan.Chunks), len(d.plan.Preempted), s.blocks.NumTokens(q.ID), s.blocks.NumFreeBlocks()), nil
	case w[0] == "done" && len(w) == 3:
		// done sampled=P stop=TOKEN: the rows of the plan in flight (cut
		// to its rows) and a token that ends a sequence (negative ones do
		// too).
		sampled, err := datadriven.Tokens(w[1], "sampled")
		if err != nil {
			return "", err
		}
		v, ok := strings.CutPrefix(w[2], "stop=")
		stopAt, err := strconv.Atoi(v)
		if !ok || err != nil {
			return "", fmt.Errorf("done: %q, want stop=TOKEN", w[2])
		}
		rows := 0
		for _, c := range d.plan.Chunks {
			if c.Logits {
				rows += 1 + c.Draft
			}
		}
		if rows > len(sampled) {
			return "", fmt.Errorf("done: %d sampled tokens for %d rows", len(sampled), rows)
		}
		stop := func(_ *Seq, tok int32) bool { return tok == int32(stopAt) || tok < 0 }
		outs := s.Done(sampled[:rows], stop, nil)
		var b strings.Builder
		b.WriteString("done:")
		for _, o := range outs {
			if o.Seq != q {
				continue
			}
			fmt.Fprintf(&b, " finish %q accepted %d of %d", o.Finish, o.Accepted, o.Drafted)
		}
		var st messages.Stats
		s.Stats(&st)
		fmt.Fprintf(&b, "; tokens %v computed %d held %v, table covers %d, %d free; stats drafts=%d tokens=%d accepted=%d",
			q.Tokens[7:], q.NumComputed, s.Get(q.ID) != nil, s.blocks.NumTokens(q.ID), s.blocks.NumFreeBlocks(),
			st.SpecDrafts, st.SpecDraftTokens, st.SpecAcceptedTokens)
		return b.String(), nil
	}
	return "", fmt.Errorf("unknown move (others N, draft prompt=P, schedule, done sampled=P stop=TOKEN)")
}

// decoding returns a scheduler with sequence 1 (prompt 0..5) past its
// prefill, its first token (100) sampled, so its next step decodes.
func decoding(t *testing.T, cfg Config, maxTokens int) (*Scheduler, *Seq) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.Add(1, toks(0, 6), maxTokens, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Schedule(); p == nil || len(p.Chunks) != 1 {
		t.Fatalf("prefill plan %+v", p)
	}
	s.Done([]int32{100}, func(*Seq, int32) bool { return false }, nil)
	s.Ready(1)
	return s, q
}
