package actors_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// ngramOn is a runtime configuration with the n-gram proposer, drafting
// whatever the batch size (the default backs off past 4 sequences).
func ngramOn(cfg actors.Config) actors.Config {
	cfg.Speculative = actors.SpecConfig{Type: actors.SpecNGram, DraftMax: 6, MaxSeqs: -1}
	return cfg
}

// quoteWorkload is 16 requests whose prompts quote text back: a reference
// prompt, its greedy continuation, then the prompt again and part of the
// continuation, so the model's next tokens repeat what the prompt holds
// and n-gram drafts are accepted. Most are greedy; some have a stop
// string, seeded sampling, penalties or logprobs, so each of those paths
// meets accepted runs.
func quoteWorkload(cases []*refCase) []*messages.GenerateRequest {
	var reqs []*messages.GenerateRequest
	for i := range 16 {
		c := cases[i%len(cases)]
		cont := c.GreedyIDs[:min(len(c.GreedyIDs), 24+i)]
		prompt := slices.Concat(c.PromptIDs, cont, c.PromptIDs, cont[:(i*3)%len(cont)])
		req := greedy(prompt, 20+(i*7)%29)
		switch i % 8 {
		case 1:
			req.Stop = []string{" the", "."}
		case 3:
			req.Sampling = messages.SamplingParams{Temperature: 0.7, Seed: uint64(100 + i), HasSeed: true}
		case 5:
			req.Sampling = messages.SamplingParams{RepetitionPenalty: 1.1, PenaltyLastN: 8, WantLogprob: true, Logprobs: 2}
		case 7:
			req.Sampling = messages.SamplingParams{Temperature: 1, TopK: 20, Seed: uint64(7 * i), HasSeed: true, WantLogprob: true}
		case 6: // mirostat: the sampler's state follows the tokens sampled, one row at a time
			req.Sampling = messages.SamplingParams{Temperature: 0.8, Mirostat: 2, MirostatTau: 5, MirostatEta: 0.1, Seed: uint64(i), HasSeed: true}
		case 0, 4: // masked: drafts checked by the grammar's matcher, or under min_tokens' ban
			if i >= 8 {
				req.Grammar = &messages.Grammar{Kind: messages.GrammarRegex, Source: `[A-Za-z ,.'!]*`}
			} else if i == 4 {
				req.MinTokens = 12
			}
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// plainResults runs each request alone without speculation.
func plainResults(t *testing.T, m *model.Model, reqs []*messages.GenerateRequest) []*result {
	t.Helper()
	return oneByOne(t, start(t, m, actors.Config{}), reqs)
}

// samePlain compares speculative results with plain ones: ids, text and
// finish reason, token for token. It returns the draft tokens accepted, by
// the requests' usage.
func samePlain(t *testing.T, got, want []*result) (accepted int) {
	t.Helper()
	for i := range want {
		g, w := got[i], want[i]
		if g.finish[0] == messages.FinishError {
			t.Errorf("request %d failed: %s", i, g.errs[0])
		}
		accepted += g.usage.AcceptedDraftTokens
		if w == nil { // no output to compare with (see draftWant)
			continue
		}
		if !slices.Equal(g.ids[0], w.ids[0]) || g.text[0] != w.text[0] || g.finish[0] != w.finish[0] {
			t.Errorf("request %d: speculative output differs from plain\n got %v %q %s\nwant %v %q %s",
				i, g.ids[0], g.text[0], g.finish[0], w.ids[0], w.text[0], w.finish[0])
		}
		if g.usage.CompletionTokens != w.usage.CompletionTokens {
			t.Errorf("request %d: %d completion tokens, plain %d", i, g.usage.CompletionTokens, w.usage.CompletionTokens)
		}
	}
	return accepted
}

// checkSpecStats checks that drafts were accepted, so that a test of equal
// output cannot pass without speculation, and that the usage and the
// scheduler agree.
func checkSpecStats(t *testing.T, rt *actors.Runtime, accepted int) {
	t.Helper()
	st := stats(t, rt)
	t.Logf("drafts %d, draft tokens %d, accepted %d (per position %v), steps %d",
		st.SpecDrafts, st.SpecDraftTokens, st.SpecAcceptedTokens, st.SpecAcceptedPerPos, st.Steps)
	if st.SpecAcceptedTokens == 0 || accepted == 0 {
		t.Fatalf("no draft token was accepted (usage %d, stats %d): the test means nothing", accepted, st.SpecAcceptedTokens)
	}
	if int64(accepted) != st.SpecAcceptedTokens {
		t.Errorf("the requests' usage counts %d accepted draft tokens, the scheduler %d", accepted, st.SpecAcceptedTokens)
	}
	if len(st.SpecAcceptedPerPos) == 0 || st.SpecAcceptedPerPos[0] > st.SpecDrafts {
		t.Errorf("acceptance per position %v of %d drafts", st.SpecAcceptedPerPos, st.SpecDrafts)
	}
}

var specModels = []struct{ path, reference string }{
	{"stories260K.gguf", "stories260K"},
	{"TinyStories-656K-Q8_0.gguf", "TinyStories-656K-Q8_0"},
}

// TestSpeculativeIdentical: with the n-gram proposer, every request gives
// exactly its plain output (greedy, and seeded sampling too: a row draws
// what plain decoding draws at its position), alone, mixed into a batch of
// 16 with chunked prefill, and with a KV pool too small for all of them
// (recompute and swap preemption with drafts in flight); drafts are
// accepted in each case.
func TestSpeculativeIdentical(t *testing.T) {
	noLeaks(t)
	for _, sm := range specModels {
		m := openModel(t, sm.path)
		reqs := quoteWorkload(loadCases(t, sm.reference))
		want := plainResults(t, m, reqs)
		t.Run(sm.reference+"/alone", func(t *testing.T) {
			rt := start(t, m, ngramOn(actors.Config{}))
			got := oneByOne(t, rt, reqs)
			checkSpecStats(t, rt, samePlain(t, got, want))
			// Each path met accepted drafts: seeded sampling (the residual
			// draw), a grammar, min_tokens.
			var sampled, masked, banned int
			for i, req := range reqs {
				n := got[i].usage.AcceptedDraftTokens
				switch {
				case req.Sampling.Temperature > 0:
					sampled += n
				case req.Grammar != nil:
					masked += n
				case req.MinTokens > 0:
					banned += n
				}
			}
			if sampled == 0 || masked == 0 || banned == 0 {
				t.Errorf("draft tokens accepted: %d for sampled requests, %d under a grammar, %d under min_tokens; want each > 0", sampled, masked, banned)
			}
		})
		t.Run(sm.reference+"/batch16", func(t *testing.T) {
			rt := start(t, m, ngramOn(actors.Config{MaxNumBatchedTokens: 48}))
			checkSpecStats(t, rt, samePlain(t, concurrently(t, rt, reqs), want))
		})
		for _, mode := range []sched.Preemption{sched.Recompute, sched.Swap} {
			t.Run(fmt.Sprintf("%s/preempt-%s", sm.reference, mode), func(t *testing.T) {
				rt, res := startQueued(t, m, ngramOn(actors.Config{NumBlocks: 20, NumHostBlocks: 24, Preemption: mode}), reqs)
				checkSpecStats(t, rt, samePlain(t, res, want))
				st := stats(t, rt)
				if st.Preemptions == 0 {
					t.Error("no preemption happened: the pool is not small enough for the test to mean anything")
				}
			})
		}
	}
}

// TestSpeculativeRejects: a request's speculative fields out of range, a
// p_min (no draft model), or speculation asked of a runtime without it are
// RequestErrors naming the field; "speculative": false is always fine.
func TestSpeculativeRejects(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	on := start(t, m, ngramOn(actors.Config{}))
	off := start(t, m, actors.Config{})
	short := start(t, m, ngramOn(actors.Config{MaxModelLen: 16}))
	cases := []struct {
		rt    *actors.Runtime
		p     messages.SpeculativeParams
		param string // "": accepted
	}{
		{on, messages.SpeculativeParams{NMax: 4, NMin: 2}, ""},
		{on, messages.SpeculativeParams{Off: true, NMax: 1000}, ""},
		{off, messages.SpeculativeParams{Off: true}, ""},
		{on, messages.SpeculativeParams{NMax: 65}, "speculative.n_max"},
		{on, messages.SpeculativeParams{NMax: -1}, "speculative.n_max"},
		{on, messages.SpeculativeParams{NMin: 5, NMax: 4}, "speculative.n_min"},
		{on, messages.SpeculativeParams{PMin: 0.75}, "speculative.p_min"},
		{off, messages.SpeculativeParams{NMax: 4}, "speculative"},
		{short, messages.SpeculativeParams{NMax: 15}, ""},
		{short, messages.SpeculativeParams{NMax: 16}, "speculative.n_max"}, // a draft longer than the context
	}
	for i, tc := range cases {
		req := greedy([]int32{1, 2, 3}, 4)
		req.Speculative = &tc.p
		err := tc.rt.Check(req)
		var re *actors.RequestError
		switch {
		case tc.param == "" && err != nil:
			t.Errorf("case %d %+v: %v", i, tc.p, err)
		case tc.param != "" && (!errors.As(err, &re) || re.Param != tc.param):
			t.Errorf("case %d %+v: %v; want a RequestError about %s", i, tc.p, err, tc.param)
		}
	}
	// A runtime whose draft is not shorter than its context does not start.
	cfg := ngramOn(actors.Config{MaxModelLen: 16, NewBackend: backend.For(m, backend.DeviceCPU)})
	cfg.Speculative.DraftMax = 16
	if _, err := actors.Start(newSystem(t), m, cfg); err == nil || !strings.Contains(err.Error(), "draft max 16 is not shorter than the context") {
		t.Errorf("draft max 16 with a context of 16: %v; want an error naming both", err)
	}
	// A request that asks for fewer draft tokens gets no more.
	req := quoteWorkload(loadCases(t, "stories260K"))[2]
	req.Speculative = &messages.SpeculativeParams{NMax: 2}
	res := run(t, on, req)
	st := stats(t, on)
	if res.usage.DraftTokens == 0 || len(st.SpecAcceptedPerPos) > 2 || st.SpecDraftTokens > 2*st.SpecDrafts {
		t.Errorf("n_max 2: %d draft tokens in %d drafts, acceptance per position %v", st.SpecDraftTokens, st.SpecDrafts, st.SpecAcceptedPerPos)
	}
}

// TestSpeculativeDeviceRestart: a device that panics in a step verifying
// drafts is restarted; the step's sequences are recomputed from their
// accepted tokens (the draft slots freed with their blocks), and every
// request still gives its plain output.
func TestSpeculativeDeviceRestart(t *testing.T) {
	noLeaksSince(t)
	m := openModel(t, "stories260K.gguf")
	// Not mirostat: a restarted device starts its samplers afresh, so a
	// mirostat request's state is lost, with or without speculation.
	reqs := slices.DeleteFunc(quoteWorkload(loadCases(t, "stories260K")), func(r *messages.GenerateRequest) bool {
		return r.Sampling.Mirostat != 0
	})
	want := plainResults(t, m, reqs)
	cpu, err := backend.NewCPU(m, 256, 16, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	var failed atomic.Bool
	f := &faulty{Backend: cpu, fail: func(_ int64, b *model.Batch) bool {
		return b.NumLogits() > len(b.BlockTables)+1 && failed.CompareAndSwap(false, true) // a step with drafts
	}}
	rt := start(t, m, ngramOn(actors.Config{Backends: []actors.Backend{f}, NumBlocks: 256}))
	accepted := samePlain(t, concurrently(t, rt, reqs), want)
	checkSpecStats(t, rt, accepted)
	st := stats(t, rt)
	if st.DeviceRestarts != 1 || f.panics.Load() != 1 {
		t.Errorf("%d panics, %d device restarts; want 1 and 1", f.panics.Load(), st.DeviceRestarts)
	}
}
