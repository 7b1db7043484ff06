package cluster

import (
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/messages"
)

// TestSplice: a choice's first attempt passes through; a rerun's tokens
// the client has had are dropped when they are the same tokens, and are an
// error (nothing passed on, nothing counted) when they differ or when the
// rerun ends before them.
func TestSplice(t *testing.T) {
	toks := func(ids ...int32) []messages.Token {
		var ts []messages.Token
		for _, id := range ids {
			ts = append(ts, messages.Token{ID: id})
		}
		return ts
	}
	type step struct {
		ch      messages.OutputChunk
		wantIDs []int32 // passed on
		wantTxt string
		err     bool
	}
	for _, tc := range []struct {
		name  string
		sent  []int32 // what the client had before the rerun, text "ab" a token
		steps []step
	}{
		{"first attempt", nil, []step{
			{messages.OutputChunk{Tokens: toks(1, 2), Text: "abab"}, []int32{1, 2}, "abab", false},
			{messages.OutputChunk{Tokens: toks(3), Text: "ab", FinishReason: "length"}, []int32{3}, "ab", false},
		}},
		{"rerun, same tokens", []int32{1, 2, 3}, []step{
			{messages.OutputChunk{Tokens: toks(1, 2), Text: "abab"}, nil, "", false},
			{messages.OutputChunk{Tokens: toks(3, 4), Text: "abab"}, []int32{4}, "ab", false},
			{messages.OutputChunk{Tokens: toks(5), Text: "ab", FinishReason: "length"}, []int32{5}, "ab", false},
		}},
		{"rerun differs", []int32{1, 2, 3}, []step{
			{messages.OutputChunk{Tokens: toks(1, 2), Text: "abab"}, nil, "", false},
			{messages.OutputChunk{Tokens: toks(7, 4), Text: "abab"}, nil, "", true},
		}},
		{"rerun differs within a chunk", []int32{1, 2, 3}, []step{
			{messages.OutputChunk{Tokens: toks(1, 9, 3, 4), Text: "abababab"}, nil, "", true},
		}},
		{"rerun ends early", []int32{1, 2, 3}, []step{
			{messages.OutputChunk{Tokens: toks(1, 2), Text: "abab", FinishReason: "stop"}, nil, "", true},
		}},
		{"rerun ends where the client was", []int32{1, 2}, []step{
			{messages.OutputChunk{Tokens: toks(1, 2), Text: "abab", FinishReason: "stop"}, nil, "", false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := progress{ids: slices.Clone(tc.sent), tokens: len(tc.sent), text: 2 * len(tc.sent)}
			seen := progress{}
			if tc.sent == nil {
				seen = sent // the first attempt: both start at zero
			}
			for i, st := range tc.steps {
				before := sent.tokens
				out, err := splice(&sent, &seen, &st.ch)
				if (err != nil) != st.err {
					t.Fatalf("step %d: error %v; want one: %v", i, err, st.err)
				}
				if err != nil {
					if sent.tokens != before {
						t.Errorf("step %d: sent moved on an error", i)
					}
					return
				}
				var ids []int32
				for _, tok := range out.Tokens {
					ids = append(ids, tok.ID)
				}
				if !slices.Equal(ids, st.wantIDs) || out.Text != st.wantTxt {
					t.Errorf("step %d: passed %v %q; want %v %q", i, ids, out.Text, st.wantIDs, st.wantTxt)
				}
			}
			if len(sent.ids) != sent.tokens {
				t.Errorf("sent ids %v for %d tokens", sent.ids, sent.tokens)
			}
		})
	}
}
