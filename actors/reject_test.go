package actors_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/sample"
)

// TestImpossibleRequest checks that a request that can never be served is
// refused at once, never queued and never retried: by Stream, with an error
// wrapping ErrInvalidRequest, for what the runtime can see at its edge; by
// the batcher's scheduler (sched.ErrNeverFits), with an "error" finish and a
// Done chunk, when only the device knows (a backend with fewer blocks than
// the Config says). Either way nothing is held afterwards and the runtime
// goes on serving.
func TestImpossibleRequest(t *testing.T) {
	noLeaksSince(t)
	m, cases := stories(t)
	vocab := int32(m.Config.VocabSize)
	fitting := greedy(cases[0].PromptIDs, 20) // 24 positions: 2 blocks of 16
	want := choicesAlone(t, m, fitting)[0][0]

	t.Run("at the edge", func(t *testing.T) {
		noLeaksSince(t)
		const maxLen, numBlocks = 256, 8 // the context, and 128 positions of blocks
		rt := start(t, m, actors.Config{MaxModelLen: maxLen, NumBlocks: numBlocks})
		for _, tc := range []struct {
			name  string
			param string // RequestError.Param
			edit  func(r *messages.GenerateRequest)
		}{
			{"empty prompt", "prompt", func(r *messages.GenerateRequest) { r.Prompt = nil }},
			{"prompt fills the context", "prompt", func(r *messages.GenerateRequest) { r.Prompt = make([]int32, maxLen) }},
			{"prompt beyond the context", "prompt", func(r *messages.GenerateRequest) { r.Prompt = make([]int32, maxLen+40) }},
			{"token past the vocabulary", "prompt", func(r *messages.GenerateRequest) { r.Prompt[2] = vocab }},
			{"negative token", "prompt", func(r *messages.GenerateRequest) { r.Prompt[1] = -1 }},
			{"n negative", "n", func(r *messages.GenerateRequest) { r.N = -1 }},
			{"n too large", "n", func(r *messages.GenerateRequest) { r.N = actors.MaxN + 1 }},
			{"max_tokens negative", "max_tokens", func(r *messages.GenerateRequest) { r.MaxTokens = -1 }},
			{"more KV blocks than a device has", "", func(r *messages.GenerateRequest) { r.MaxTokens = 200 }},
			{"top_p 2", "", func(r *messages.GenerateRequest) { r.Sampling.TopP = 2 }},
			{"min_p negative", "", func(r *messages.GenerateRequest) { r.Sampling.MinP = -0.5 }},
			{"temperature NaN", "", func(r *messages.GenerateRequest) { r.Sampling.Temperature = float32(math.NaN()) }},
			{"too many logprobs", "", func(r *messages.GenerateRequest) { r.Sampling.Logprobs = sample.MaxLogprobs + 1 }},
			{"logit_bias past the vocabulary", "logit_bias", func(r *messages.GenerateRequest) {
				r.Sampling.LogitBias = map[int32]float32{vocab: 1}
			}},
			{"logit_bias negative", "logit_bias", func(r *messages.GenerateRequest) {
				r.Sampling.LogitBias = map[int32]float32{3: 1, -2: 1}
			}},
			{"stop token past the vocabulary", "stop_token_ids", func(r *messages.GenerateRequest) { r.StopTokenIDs = []int32{2, vocab} }},
			{"negative stop token", "stop_token_ids", func(r *messages.GenerateRequest) { r.StopTokenIDs = []int32{-1} }},
			{"empty stop string", "stop", func(r *messages.GenerateRequest) { r.Stop = []string{".", ""} }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req := copyReq(fitting)
				tc.edit(req)
				ch, err := rt.Stream(context.Background(), req)
				if !errors.Is(err, actors.ErrInvalidRequest) || ch != nil {
					t.Fatalf("Stream: %v, channel %v; want an error wrapping ErrInvalidRequest", err, ch)
				}
				var re *actors.RequestError
				if !errors.As(err, &re) || re.Param != tc.param {
					t.Errorf("Stream: %#v; want a RequestError about %q", err, tc.param)
				}
				if cerr := rt.Check(req); cerr == nil || cerr.Error() != err.Error() {
					t.Errorf("Check: %v; Stream: %v", cerr, err)
				}
				t.Log(err)
			})
		}
		st := pollStats(t, rt, "idle", idleStats)
		if st.Steps != 0 || st.Rejected != 0 {
			t.Errorf("refused requests reached the batcher: %+v", st)
		}
		if r := run(t, rt, copyReq(fitting)); !slices.Equal(r.ids[0], want) {
			t.Errorf("after the refusals: %v\nwant %v", r.ids[0], want)
		}
	})

	t.Run("by the scheduler", func(t *testing.T) {
		noLeaksSince(t)
		// The Config says 64 blocks, so Stream lets 105 positions (7 blocks)
		// through; the device has 2, so the scheduler refuses them.
		be := &fewBlocks{Backend: cpuBackendFor(t, m, 64, 0), numBlocks: 2}
		rt := start(t, m, actors.Config{NumBlocks: 64, Backends: []actors.Backend{be}})
		rejected := int64(0)
		for _, n := range []int{1, 3} {
			req := copyReq(fitting)
			req.MaxTokens, req.N = 100, n
			r := newStreamTail(t, streamOrFail(t, rt, context.Background(), req), n).wait()
			for c := range n {
				if r.finish[c] != messages.FinishError || !strings.Contains(r.errs[c], sched.ErrNeverFits.Error()) || len(r.ids[c]) != 0 {
					t.Errorf("n=%d choice %d: %v finish %q err %q; want %q and no token", n, c, r.ids[c], r.finish[c], r.errs[c], sched.ErrNeverFits)
				}
			}
			if u := r.done.Usage; u == nil || u.CompletionTokens != 0 {
				t.Errorf("n=%d: usage %+v", n, u)
			}
			rejected += int64(n)
			st := pollStats(t, rt, "idle", idleStats)
			if st.Rejected != rejected || st.NumBlocks != 2 || st.Steps != 0 {
				t.Errorf("n=%d: stats %+v, want %d rejected, 2 blocks, no step", n, st, rejected)
			}
		}
		// 24 positions fit in 2 blocks.
		if r := run(t, rt, copyReq(fitting)); !slices.Equal(r.ids[0], want) || r.finish[0] != messages.FinishLength {
			t.Errorf("after the rejections: %v %s %s\nwant %v", r.ids[0], r.finish[0], r.errs[0], want)
		}
		if st := pollStats(t, rt, "idle", idleStats); st.Rejected != rejected {
			t.Errorf("stats %+v, want %d rejected", st, rejected)
		}
	})
}

// TestCheckLeavesRequest checks that Check and Stream leave the caller's
// request as it was: what it leaves open (RequestID, the seed) is filled in
// on the runtime's copy, so a caller (a cluster node) can fill it in itself.
func TestCheckLeavesRequest(t *testing.T) {
	noLeaksSince(t)
	m := openModel(t, "stories260K.gguf")
	rt := start(t, m, actors.Config{})
	req := greedy(loadCases(t, "stories260K")[0].PromptIDs, 4)
	req.Sampling.Temperature = 1
	want := copyReq(req)
	if err := rt.Check(req); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req, want) {
		t.Fatalf("Check changed the request:\n got %+v\nwant %+v", req, want)
	}
	r := run(t, rt, req)
	if !reflect.DeepEqual(req, want) {
		t.Fatalf("Stream changed the request:\n got %+v\nwant %+v", req, want)
	}
	if len(r.ids[0]) != 4 {
		t.Fatalf("%d tokens, want 4", len(r.ids[0]))
	}
}
