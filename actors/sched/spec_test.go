package sched

import (
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

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

// TestScheduleDraft: a decoding sequence's draft rides its step as far as
// the budget, MaxLen, the free blocks and SpecMaxSeqs allow, and never
// preempts.
func TestScheduleDraft(t *testing.T) {
	cases := []struct {
		name      string
		cfg       Config
		maxTokens int
		others    int // more decoding sequences
		draft     []int32
		want      int
	}{
		{"whole draft", Config{MaxModelLen: 32, NumBlocks: 8, BlockSize: 4}, 0, 0, toks(200, 5), 5},
		{"budget", Config{MaxModelLen: 32, NumBlocks: 8, BlockSize: 4, MaxNumBatchedTokens: 6}, 0, 0, toks(200, 7), 5},
		{"max tokens", Config{MaxModelLen: 32, NumBlocks: 8, BlockSize: 4}, 4, 0, toks(200, 5), 2},
		{"context", Config{MaxModelLen: 10, NumBlocks: 8, BlockSize: 4}, 0, 0, toks(200, 5), 2},
		{"too few free blocks: no draft, no preemption", Config{MaxModelLen: 16, NumBlocks: 4, BlockSize: 4}, 0, 1, toks(200, 8), 0},
		{"within SpecMaxSeqs", Config{MaxModelLen: 32, NumBlocks: 16, BlockSize: 4, SpecMaxSeqs: 2}, 0, 1, toks(200, 3), 3},
		{"past SpecMaxSeqs", Config{MaxModelLen: 32, NumBlocks: 16, BlockSize: 4, SpecMaxSeqs: 2}, 0, 2, toks(200, 3), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, q := decoding(t, tc.cfg, tc.maxTokens)
			for i := range tc.others {
				id := kv.SeqID(10 + i)
				if _, err := s.Add(id, toks(50, 3), 0, 0); err != nil {
					t.Fatal(err)
				}
				s.Schedule()
				s.Done([]int32{7, 7, 7, 7}[:len(s.plan.Chunks)], func(*Seq, int32) bool { return false }, nil)
				s.Ready(1)
				s.Ready(id)
			}
			q.Draft = tc.draft
			p := s.Schedule()
			var c Chunk
			for _, ch := range p.Chunks {
				if ch.Seq == q {
					c = ch
				}
			}
			if c.Seq == nil || c.Draft != tc.want {
				t.Fatalf("chunk %+v: draft %d, want %d", c, c.Draft, tc.want)
			}
			if len(p.Preempted) > 0 {
				t.Errorf("a draft preempted %d sequences", len(p.Preempted))
			}
			if got := s.blocks.NumTokens(q.ID); got != len(q.Tokens)+tc.want {
				t.Errorf("block table covers %d positions, want %d", got, len(q.Tokens)+tc.want)
			}
		})
	}
}

// TestVerifyDraft: Done gives a sequence the samples of its run while each
// equals the draft token after it, ends it on a stop token or its length
// inside the run, and gives back the rejected draft slots.
func TestVerifyDraft(t *testing.T) {
	draft := []int32{201, 202, 203, 204}
	cases := []struct {
		name         string
		maxTokens    int
		sampled      []int32 // one per row: the token, then one per draft token
		stopAt       int32   // a token that ends the sequence; 0: none
		wantTokens   []int32 // appended to the prompt and 100
		wantFinish   string
		wantAccepted int
	}{
		{"all accepted, then the bonus", 0, []int32{201, 202, 203, 204, 300}, 0, []int32{201, 202, 203, 204, 300}, "", 4},
		{"first rejected", 0, []int32{300, 9, 9, 9, 9}, 0, []int32{300}, "", 0},
		{"third rejected", 0, []int32{201, 202, 300, -1, -1}, 0, []int32{201, 202, 300}, "", 2},
		{"stop token accepted in the run", 0, []int32{201, 202, 203, 204, 300}, 202, []int32{201}, messages.FinishStop, 1},
		{"stop token as the correction", 0, []int32{201, 5, -1, -1, -1}, 5, []int32{201}, messages.FinishStop, 1},
		{"length inside the run", 4, []int32{201, 202, 203, 204, 300}, 0, []int32{201, 202, 203}, messages.FinishLength, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, q := decoding(t, Config{MaxModelLen: 32, NumBlocks: 8, BlockSize: 4}, tc.maxTokens)
			free := s.blocks.NumFreeBlocks()
			q.Draft = slices.Clone(draft)
			p := s.Schedule()
			d := p.Chunks[0].Draft
			stop := func(_ *Seq, tok int32) bool { return tok == tc.stopAt || tok < 0 }
			out := s.Done(tc.sampled[:1+d], stop, nil)
			if len(out) != 1 {
				t.Fatalf("%d outcomes", len(out))
			}
			o := out[0]
			got := q.Tokens[7:]
			if o.Finish != "" && o.Finish != messages.FinishLength {
				got = slices.Clone(q.Tokens[7:])
			}
			if !slices.Equal(got, tc.wantTokens) && o.Finish != messages.FinishStop {
				t.Errorf("tokens %v, want %v", got, tc.wantTokens)
			}
			if o.Finish != tc.wantFinish || o.Accepted != tc.wantAccepted || o.Drafted != d {
				t.Errorf("finish %q accepted %d of %d; want %q, %d", o.Finish, o.Accepted, o.Drafted, tc.wantFinish, tc.wantAccepted)
			}
			if o.Finish != "" {
				if s.Get(1) != nil || s.blocks.NumFreeBlocks() != 8 {
					t.Errorf("finished sequence still held: %d free blocks", s.blocks.NumFreeBlocks())
				}
				return
			}
			if q.NumComputed != 7+o.Accepted || len(q.Tokens) != q.NumComputed+1 {
				t.Errorf("NumComputed %d, %d tokens; want %d and one more", q.NumComputed, len(q.Tokens), 7+o.Accepted)
			}
			if n := s.blocks.NumTokens(q.ID); n != q.NumComputed {
				t.Errorf("block table covers %d positions, want %d", n, q.NumComputed)
			}
			if want := free - ((q.NumComputed+3)/4 - 2); s.blocks.NumFreeBlocks() != want {
				t.Errorf("%d free blocks, want %d", s.blocks.NumFreeBlocks(), want)
			}
			var st messages.Stats
			s.Stats(&st)
			if st.SpecDrafts != 1 || st.SpecDraftTokens != int64(d) || st.SpecAcceptedTokens != int64(o.Accepted) {
				t.Errorf("stats %d drafts, %d tokens, %d accepted", st.SpecDrafts, st.SpecDraftTokens, st.SpecAcceptedTokens)
			}
		})
	}
}
