package sched

import (
	"errors"
	"testing"

	"github.com/troupe-llm/troupe/kv"
)

// TestAddEmbedding: a prompt may fill the context; past it, past the
// blocks, or (whole) past the step budget it never fits; a whole sequence
// waits for a step with room for all of it; none takes a cached prefix.
func TestAddEmbedding(t *testing.T) {
	s, err := New(Config{MaxModelLen: 32, NumBlocks: 16, BlockSize: 4, MaxNumBatchedTokens: 24})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n     int
		whole bool
		ok    bool
	}{{32, false, true}, {33, false, false}, {0, false, false}, {24, true, true}, {25, true, false}} {
		id := kv.SeqID(100 + tc.n)
		if tc.whole {
			id += 1000
		}
		_, err := s.AddEmbedding(id, toks(1, tc.n), 0, tc.whole)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrNeverFits)) {
			t.Errorf("%d tokens, whole %v: error %v", tc.n, tc.whole, err)
		}
		s.Finish(id)
	}

	// A generation caches 16 tokens; the embedding of the same prompt computes them all.
	prompt := toks(1, 20)
	if _, err := s.Add(1, prompt, 4, 0); err != nil {
		t.Fatal(err)
	}
	p := s.Schedule()
	s.Done([]int32{7}, func(*Seq, int32) bool { return false }, nil)
	_ = p
	q, err := s.AddEmbedding(2, prompt, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	// Seq 2 needs 20 tokens of the budget of 24: it runs whole, alone.
	p = s.Schedule()
	var got *Chunk
	for i := range p.Chunks {
		if p.Chunks[i].Seq == q {
			got = &p.Chunks[i]
		}
	}
	if got == nil || got.Start != 0 || got.End != 20 || !got.Logits {
		t.Fatalf("embedding chunk %+v, want all 20 tokens from 0", got)
	}
	s.Done([]int32{0}, func(q *Seq, _ int32) bool { return q.ID == 2 }, nil)
	if s.Get(2) != nil {
		t.Error("the embedding is still scheduled after its step")
	}

	// Whole: with 10 tokens of budget used by a prompt ahead of it, a
	// 20-token embedding waits for the next step instead of running a chunk.
	if _, err := s.Add(3, toks(500, 14), 4, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEmbedding(4, toks(900, 20), 0, true); err != nil {
		t.Fatal(err)
	}
	s.Ready(1)
	p = s.Schedule()
	for _, c := range p.Chunks {
		if c.Seq.ID == 4 {
			t.Errorf("whole embedding ran a chunk %d..%d beside %d other tokens", c.Start, c.End, p.NumTokens()-(c.End-c.Start))
		}
	}
	s.Fail()
}
