package actors_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// draftOn is a runtime configuration with draft as the draft model,
// drafting up to k tokens whatever the batch size.
func draftOn(cfg actors.Config, draft *model.Model, k int) actors.Config {
	cfg.Speculative = actors.SpecConfig{Type: actors.SpecDraft, DraftMax: k, MaxSeqs: -1, DraftModel: draft,
		NewDraftBackend: backend.For(draft, backend.DeviceCPU)}
	return cfg
}

// draftBlocksFreed waits (generously) until the draft model's KV blocks
// are all back: every sequence gave its own back when it ended.
func draftBlocksFreed(t *testing.T, rt *actors.Runtime) {
	t.Helper()
	for deadline := time.Now().Add(gateWait); actors.DraftBlocksInUse(rt) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d draft KV blocks still held after every request ended", actors.DraftBlocksInUse(rt))
		}
	}
}

// rejectionSampled reports whether req's drafts carry the draft model's q
// (sampled, with a distribution: not greedy, mirostat or XTC), so its
// output is distributed as plain sampling's but not token for token the
// plain output.
func rejectionSampled(req *messages.GenerateRequest) bool {
	return actors.SampleParams(&req.Sampling).HasDist()
}

// draftWant is the output each request must give with a draft model: the
// plain output, but for a rejection-sampled request (rejectionSampled) the
// output the speculative runtime gives it alone (ref; nil: none to compare
// with, where the draft model misses positions).
func draftWant(reqs []*messages.GenerateRequest, plain, ref []*result) []*result {
	want := slices.Clone(plain)
	for i, req := range reqs {
		if rejectionSampled(req) {
			want[i] = nil
			if ref != nil {
				want[i] = ref[i]
			}
		}
	}
	return want
}

// draftAlone runs each request alone on a runtime with the draft model.
func draftAlone(t *testing.T, m, draft *model.Model, k int, reqs []*messages.GenerateRequest) []*result {
	t.Helper()
	return oneByOne(t, start(t, m, draftOn(actors.Config{}, draft, k)), reqs)
}

// differs counts the requests whose outputs differ.
func differs(a, b []*result) int {
	n := 0
	for i := range a {
		if !slices.Equal(a[i].ids[0], b[i].ids[0]) {
			n++
		}
	}
	return n
}

// TestSpeculativeDraftSelf: the model as its own draft model proposes
// exactly what the model decodes (the forward pass is batch-invariant),
// so every draft token is accepted: the mean accepted length is k, and
// the output is the plain output.
func TestSpeculativeDraftSelf(t *testing.T) {
	noLeaks(t)
	const k = 4
	m := openModel(t, "stories260K.gguf")
	draft := openModel(t, "stories260K.gguf")
	var reqs []*messages.GenerateRequest
	for _, c := range loadCases(t, "stories260K") {
		// max_tokens 1 + n(k+1), no EOS: every draft has k tokens.
		req := greedy(c.PromptIDs, 1+5*(k+1))
		req.IgnoreEOS = true
		reqs = append(reqs, req)
	}
	want := plainResults(t, m, reqs)
	for _, together := range []bool{false, true} {
		rt := start(t, m, draftOn(actors.Config{}, draft, k))
		var got []*result
		if together { // the draft device drafts for several sequences per pass
			got = concurrently(t, rt, reqs)
		} else {
			got = oneByOne(t, rt, reqs)
		}
		checkSpecStats(t, rt, samePlain(t, got, want))
		st := stats(t, rt)
		if st.SpecDraftTokens != k*st.SpecDrafts || st.SpecAcceptedTokens != st.SpecDraftTokens {
			t.Errorf("together %v: %d drafts of %d tokens, %d accepted: mean accepted length %.2f, want %d", together,
				st.SpecDrafts, st.SpecDraftTokens, st.SpecAcceptedTokens, float64(st.SpecAcceptedTokens)/float64(st.SpecDrafts), k)
		}
		draftBlocksFreed(t, rt)
	}
}

// TestSpeculativeDraftOther: a draft model of another quantization (the
// same synthetic weights in Q4_0 for an F16 target) is accepted in part;
// a greedy request gives exactly its plain output, alone and 8 at once. A
// seeded sampled request is verified against the draft model's q
// (rejection sampling: distributed as plain sampling, model/sample's
// TestVerifyKeepsTheTargetDistribution) and gives the same output run to
// run and 8 at once under a token budget that cuts drafts (the run's last
// row verifies the look-ahead: a position's token does not depend on where
// the steps' runs end), which differs from the plain output.
func TestSpeculativeDraftOther(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "synthetic/synth-llama-tiny256-F16.gguf")
	draft := openModel(t, "synthetic/synth-llama-tiny256-Q4_0.gguf")
	var reqs []*messages.GenerateRequest
	for i, text := range []string{"Once upon a time", "The cat sat on the mat", "a b c d e f", "Hello, world", "1 2 3 4", "x", "It was a dark", "Tom and Sue"} {
		ids, err := m.Tokenizer.Encode(text, true, false)
		if err != nil {
			t.Fatal(err)
		}
		req := greedy(ids, 24+3*i)
		if i%4 == 3 {
			req.Sampling = messages.SamplingParams{Temperature: 0.8, Seed: uint64(i), HasSeed: true}
		}
		reqs = append(reqs, req)
	}
	plain := plainResults(t, m, reqs)
	ref := draftAlone(t, m, draft, 4, reqs)
	want := draftWant(reqs, plain, ref)
	if n := differs(ref, plain); n == 0 {
		t.Errorf("no sampled request's output differs from plain: were its drafts verified against q?")
	}
	t.Run("alone", func(t *testing.T) {
		rt := start(t, m, draftOn(actors.Config{}, draft, 4))
		checkSpecStats(t, rt, samePlain(t, oneByOne(t, rt, reqs), want))
		draftBlocksFreed(t, rt)
	})
	t.Run("batch", func(t *testing.T) {
		rt := start(t, m, draftOn(actors.Config{MaxNumBatchedTokens: 32}, draft, 4))
		checkSpecStats(t, rt, samePlain(t, concurrently(t, rt, reqs), want))
		draftBlocksFreed(t, rt)
	})
}

// TestSpeculativeDraftVocab: a draft model with another vocabulary is a
// clear error at Start, as is a draft type without a draft model.
func TestSpeculativeDraftVocab(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	other := openModel(t, "TinyStories-656K-Q8_0.gguf")
	cfg := draftOn(actors.Config{NewBackend: backend.For(m, backend.DeviceCPU)}, other, 4)
	if _, err := actors.Start(newSystem(t), m, cfg); err == nil || !strings.Contains(err.Error(), "vocabulary") {
		t.Errorf("a draft model of another vocabulary: %v; want an error about the vocabulary", err)
	}
	cfg.Speculative.DraftModel = nil
	if _, err := actors.Start(newSystem(t), m, cfg); err == nil || !strings.Contains(err.Error(), "draft model") {
		t.Errorf("no draft model: %v; want an error naming it", err)
	}
	cfg = draftOn(actors.Config{NewBackend: backend.For(m, backend.DeviceCPU)}, m, 4)
	cfg.Speculative.DraftPMin = 1.5
	if _, err := actors.Start(newSystem(t), m, cfg); err == nil || !strings.Contains(err.Error(), "p-min") {
		t.Errorf("p-min 1.5: %v; want an error naming it", err)
	}
}

// TestSpeculativeDraftFaults: a draft device whose forward pass panics
// (twice; then it works again), a KV pool too small for every sequence
// (the target's preempts, the draft's has no room for some), and a
// request's p_min of 1 (no token is that sure: no draft) all leave every
// output the plain one (but a rejection-sampled request's: a position the
// draft model missed is a plain sample, so its output is checked only for
// errors).
func TestSpeculativeDraftFaults(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	draft := openModel(t, "stories260K.gguf")
	reqs := quoteWorkload(loadCases(t, "stories260K"))
	want := draftWant(reqs, plainResults(t, m, reqs), nil) // a missed position changes a sampled output
	t.Run("device-panics", func(t *testing.T) {
		cfg := draftOn(actors.Config{}, draft, 4)
		var f *faulty
		cfg.Speculative.NewDraftBackend = func(device int, c actors.BackendConfig) (actors.Backend, error) {
			be, err := backend.For(draft, backend.DeviceCPU)(device, c)
			f = &faulty{Backend: be, fail: func(n int64, _ *model.Batch) bool { return n == 3 || n == 4 }}
			return f, err
		}
		rt := start(t, m, cfg)
		checkSpecStats(t, rt, samePlain(t, concurrently(t, rt, reqs), want))
		if f.panics.Load() != 2 {
			t.Errorf("%d panics of the draft device, want 2", f.panics.Load())
		}
		draftBlocksFreed(t, rt)
	})
	for _, mode := range []sched.Preemption{sched.Recompute, sched.Swap} {
		t.Run(fmt.Sprintf("small-pool-%s", mode), func(t *testing.T) {
			// Every request is queued before the first step: submitted
			// one by one on a loaded machine, the first could end before
			// the last came, and the pool never run short.
			rt, res := startQueued(t, m, draftOn(actors.Config{NumBlocks: 20, NumHostBlocks: 24, Preemption: mode}, draft, 4), reqs)
			checkSpecStats(t, rt, samePlain(t, res, want))
			if st, err := rt.Stats(timeout); err != nil || st.Preemptions == 0 {
				t.Errorf("stats %v, %v: want preemptions", st, err)
			}
			draftBlocksFreed(t, rt)
		})
	}
	t.Run("p_min", func(t *testing.T) {
		rt := start(t, m, draftOn(actors.Config{}, draft, 4))
		req := copyReq(reqs[0])
		req.Speculative = &messages.SpeculativeParams{PMin: 1}
		if got := run(t, rt, req); got.usage.DraftTokens != 0 || !slices.Equal(got.ids[0], want[0].ids[0]) {
			t.Errorf("p_min 1: %d draft tokens (want 0), output %v, plain %v", got.usage.DraftTokens, got.ids[0], want[0].ids[0])
		}
		req.Speculative.PMin = 1.5
		if err := rt.Check(req); err == nil || !strings.Contains(err.Error(), "speculative.p_min") {
			t.Errorf("p_min 1.5: %v; want an error naming speculative.p_min", err)
		}
	})
}

// TestSpeculativeDraftBackOff: past SpecMaxSeqs running sequences the
// scheduler drops drafts and says so in each step result (NoDraft), so the
// sequences stop asking the draft device (whose drafts would be thrown
// away) until the load falls: it drafts for far fewer steps than the
// sequences take, and the output is the plain output (a rejection-sampled
// request's output is checked only for errors: the positions it decodes
// while the device is busy are plain samples, so its output depends on the
// load).
func TestSpeculativeDraftBackOff(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	draft := openModel(t, "stories260K.gguf")
	reqs := quoteWorkload(loadCases(t, "stories260K"))
	// One long greedy request outlives the others: once it runs alone its
	// results no longer say NoDraft, and it drafts again.
	long := copyReq(reqs[2])
	long.MaxTokens, long.IgnoreEOS = 160, true
	reqs = append(reqs, long)
	want := draftWant(reqs, plainResults(t, m, reqs), nil)
	cfg := draftOn(actors.Config{}, draft, 4)
	cfg.Speculative.MaxSeqs = 1
	rt := start(t, m, cfg)
	got := concurrently(t, rt, reqs)
	samePlain(t, got, want)
	tokens := 0
	for _, g := range got {
		tokens += g.usage.CompletionTokens
	}
	asked := actors.DraftsAsked(rt)
	t.Logf("%d draft asks for %d tokens of 17 sequences; the long one: %d draft tokens, %d accepted", asked, tokens,
		got[16].usage.DraftTokens, got[16].usage.AcceptedDraftTokens)
	if asked > int64(tokens/4) {
		t.Errorf("%d draft asks for %d tokens of 17 sequences, 1 verified at a time: want far fewer asks than tokens", asked, tokens)
	}
	if got[16].usage.DraftTokens == 0 {
		t.Errorf("the request that ran alone at the end had no draft: the back-off did not end with the load")
	}
	draftBlocksFreed(t, rt)
}

// TestSpeculativeDraftSelfSampled: the model as its own draft model, on
// seeded sampled requests, draws its drafts from q = p (the forward pass is
// batch-invariant), so the rejection rule accepts (nearly) every draft
// token: q leaves out tokens under 1e-4 of the top one's probability, so
// q(x) is a little above p(x) and a few may be rejected. The one-hot rule
// would accept only about sum(p²) of them. The outputs are the same alone
// and 8 at once, and differ from plain decoding's.
func TestSpeculativeDraftSelfSampled(t *testing.T) {
	noLeaks(t)
	const k = 4
	m := openModel(t, "stories260K.gguf")
	draft := openModel(t, "stories260K.gguf")
	var reqs []*messages.GenerateRequest
	cases := loadCases(t, "stories260K")
	for i := range 8 {
		req := greedy(cases[i%len(cases)].PromptIDs, 30)
		req.IgnoreEOS = true
		req.Sampling = messages.SamplingParams{Temperature: 0.8, TopK: 40 * (i % 2), Seed: uint64(11 + i), HasSeed: true}
		reqs = append(reqs, req)
	}
	plain := plainResults(t, m, reqs)
	ref := draftAlone(t, m, draft, k, reqs)
	if n := differs(ref, plain); n == 0 {
		t.Errorf("every sampled output is the plain one: were the drafts verified against q?")
	}
	rt := start(t, m, draftOn(actors.Config{}, draft, k))
	got := concurrently(t, rt, reqs)
	checkSpecStats(t, rt, samePlain(t, got, ref))
	st := stats(t, rt)
	if rate := float64(st.SpecAcceptedTokens) / float64(max(st.SpecDraftTokens, 1)); rate < 0.95 {
		t.Errorf("%d of %d draft tokens accepted (%.3f): a draft drawn from p itself should be accepted nearly always",
			st.SpecAcceptedTokens, st.SpecDraftTokens, rate)
	}
	draftBlocksFreed(t, rt)
}
