package actors_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// invarianceModels are the shared models the runtime tests run on: the real
// ones, and synthetic ones covering K-quants, F16 and the qwen2/qwen3
// architectures. reference names the directory of ../shared/reference.
var invarianceModels = []struct {
	path, reference string
	comfortable     []int // reference cases whose greedy path has a safe top-1 gap
}{
	{"stories260K.gguf", "stories260K", []int{0, 1, 2}},
	{"TinyStories-656K-Q8_0.gguf", "TinyStories-656K-Q8_0", []int{0, 3}},
	{"tinystories-656k-safetensors", "tinystories-656k-safetensors", []int{0, 1}},
	{"synthetic/synth-llama-tiny256-Q4_K_M.gguf", "synth-llama-tiny256-Q4_K_M", nil},
	{"synthetic/synth-llama-tiny256-F16.gguf", "synth-llama-tiny256-F16", nil},
	{"synthetic/synth-qwen2-tiny256-Q8_0.gguf", "synth-qwen2-tiny256-Q8_0", nil},
	{"synthetic/synth-qwen3-tiny256-Q8_0.gguf", "synth-qwen3-tiny256-Q8_0", nil},
}

// workload is 16 greedy requests over a model's reference prompts: each
// prompt as it is, and extended by part of its reference continuation (so
// prompts of different lengths, some spanning several blocks), with
// different max_tokens.
func workload(cases []*refCase) []*messages.GenerateRequest {
	var reqs []*messages.GenerateRequest
	for i := range 16 {
		c := cases[i%len(cases)]
		prompt := slices.Clone(c.PromptIDs)
		if i >= len(cases) {
			prompt = append(prompt, c.GreedyIDs[:(i*7)%len(c.GreedyIDs)]...)
		}
		reqs = append(reqs, greedy(prompt, 16+(i*5)%33))
	}
	return reqs
}

// aloneCache keeps aloneIDs's results per model path: TestBatchInvariance and
// TestPreemption run the same workloads.
var aloneCache sync.Map // string -> [][]int32

// aloneIDs runs each request by itself on a fresh default runtime.
func aloneIDs(t *testing.T, path string, m *model.Model, reqs []*messages.GenerateRequest) [][]int32 {
	t.Helper()
	if out, ok := aloneCache.Load(path); ok {
		return out.([][]int32)
	}
	rt := start(t, m, actors.Config{})
	var out [][]int32
	for _, req := range reqs {
		out = append(out, run(t, rt, copyReq(req)).ids[0])
	}
	aloneCache.Store(path, out)
	return out
}

func copyReq(r *messages.GenerateRequest) *messages.GenerateRequest {
	c := *r
	c.Prompt = slices.Clone(r.Prompt)
	return &c
}

// oneByOne runs each request alone, one after another, and returns their
// results.
func oneByOne(t *testing.T, rt *actors.Runtime, reqs []*messages.GenerateRequest) []*result {
	t.Helper()
	var res []*result
	for _, req := range reqs {
		res = append(res, run(t, rt, copyReq(req)))
	}
	return res
}

// concurrently submits every request at once and returns their results.
func concurrently(t *testing.T, rt *actors.Runtime, reqs []*messages.GenerateRequest) []*result {
	t.Helper()
	chans := streamAll(t, rt, reqs)
	var res []*result
	for _, ch := range chans {
		res = append(res, collect(t, ch, 1))
	}
	return res
}

// heldBackend holds every forward pass until open is closed.
type heldBackend struct {
	actors.Backend
	open <-chan struct{}
}

func (h heldBackend) Forward(b *model.Batch, logits []float32) error {
	<-h.open
	return h.Backend.Forward(b, logits)
}

// startQueued starts a runtime for cfg whose devices run no forward pass
// until every one of reqs is queued, then runs them as concurrently does:
// the requests overlap (share batches, fill the KV pool) however slowly a
// loaded machine submits them.
func startQueued(t *testing.T, m *model.Model, cfg actors.Config, reqs []*messages.GenerateRequest) (*actors.Runtime, []*result) {
	t.Helper()
	cfg, release := holdDevices(m, cfg)
	rt := start(t, m, cfg)
	return rt, runQueued(t, rt, reqs, release)
}

// holdDevices returns cfg with its devices held: no forward pass runs
// until release is called (any number of times).
func holdDevices(m *model.Model, cfg actors.Config) (actors.Config, func()) {
	open := make(chan struct{})
	if cfg.Backends != nil {
		bs := make([]actors.Backend, len(cfg.Backends))
		for i, be := range cfg.Backends {
			bs[i] = heldBackend{be, open}
		}
		cfg.Backends = bs
	} else {
		newBackend := cfg.NewBackend
		if newBackend == nil {
			newBackend = backend.For(m, backend.DeviceCPU)
		}
		cfg.NewBackend = func(device int, c actors.BackendConfig) (actors.Backend, error) {
			be, err := newBackend(device, c)
			if err != nil {
				return nil, err
			}
			return heldBackend{be, open}, nil
		}
	}
	var once sync.Once
	return cfg, func() { once.Do(func() { close(open) }) }
}

// runQueued runs reqs on rt, whose devices holdDevices held, as
// concurrently does, releasing the devices once every request is queued.
func runQueued(t *testing.T, rt *actors.Runtime, reqs []*messages.GenerateRequest, release func()) []*result {
	t.Helper()
	t.Cleanup(release) // runs before rt stops: a failed wait leaves no step held
	chans := streamAll(t, rt, reqs)
	seqs := 0
	for _, r := range reqs {
		seqs += max(r.N, 1)
	}
	waitQueued(t, rt, seqs)
	release()
	var res []*result
	for _, ch := range chans {
		res = append(res, collect(t, ch, 1))
	}
	return res
}

// streamAll submits every request at once (copies: the runtime takes
// their prompts) and returns their streams.
func streamAll(t *testing.T, rt *actors.Runtime, reqs []*messages.GenerateRequest) []<-chan *messages.OutputChunk {
	t.Helper()
	var chans []<-chan *messages.OutputChunk
	for _, req := range reqs {
		ch, err := rt.Stream(context.Background(), copyReq(req))
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	return chans
}

// sameAsAlone compares concurrent results with the requests run alone.
func sameAsAlone(t *testing.T, res []*result, want [][]int32) {
	t.Helper()
	for i, r := range res {
		if r.finish[0] == messages.FinishError {
			t.Errorf("request %d failed: %s", i, r.errs[0])
		}
		if !slices.Equal(r.ids[0], want[i]) {
			t.Errorf("request %d: concurrent ids differ from alone\n got %v\nwant %v", i, r.ids[0], want[i])
		}
	}
}

// TestBatchInvariance: 16 concurrent greedy requests give exactly the ids
// each gives alone, and alone gives llama.cpp's greedy ids where the
// reference path is safe from near-ties. The concurrent runtime uses a small
// token budget, so prompts are chunked and mixed with decode steps.
func TestBatchInvariance(t *testing.T) {
	noLeaks(t)
	for _, tm := range invarianceModels {
		t.Run(tm.reference, func(t *testing.T) {
			m := openModel(t, tm.path)
			cases := loadCases(t, tm.reference)
			for _, k := range tm.comfortable {
				r := run(t, start(t, m, actors.Config{}), greedy(cases[k].PromptIDs, len(cases[k].GreedyIDs)))
				if !slices.Equal(r.ids[0], cases[k].GreedyIDs) {
					t.Errorf("case %d: greedy ids differ from llama.cpp\n got %v\nwant %v", k, r.ids[0], cases[k].GreedyIDs)
				}
			}
			reqs := workload(cases)
			want := aloneIDs(t, tm.path, m, reqs)
			rt := start(t, m, actors.Config{MaxNumBatchedTokens: 24})
			sameAsAlone(t, concurrently(t, rt, reqs), want)
		})
	}
}

// TestPreemption: with a KV pool too small for every request at once, all
// 16 complete with the ids they give alone, in both modes, preemptions (and
// swaps) really happen, and each request's usage counts its own.
func TestPreemption(t *testing.T) {
	noLeaks(t)
	for _, tm := range invarianceModels[:4] {
		m := openModel(t, tm.path)
		reqs := workload(loadCases(t, tm.reference))
		want := aloneIDs(t, tm.path, m, reqs)
		for _, mode := range []sched.Preemption{sched.Recompute, sched.Swap} {
			t.Run(fmt.Sprintf("%s/%s", tm.reference, mode), func(t *testing.T) {
				rt := start(t, m, actors.Config{NumBlocks: 12, NumHostBlocks: 16, Preemption: mode})
				res := concurrently(t, rt, reqs)
				sameAsAlone(t, res, want)
				st := stats(t, rt)
				var total int64
				for i, r := range res {
					if r.usage.Preemptions != r.preempted[0] {
						t.Errorf("request %d: usage says %d preemptions, its choice %d", i, r.usage.Preemptions, r.preempted[0])
					}
					total += int64(r.usage.Preemptions)
				}
				if total != st.Preemptions {
					t.Errorf("the requests' usage counts %d preemptions, the scheduler %d", total, st.Preemptions)
				}
				t.Logf("preemptions %d, swap-outs %d, swap-ins %d, steps %d", st.Preemptions, st.SwapOuts, st.SwapIns, st.Steps)
				if st.Preemptions == 0 {
					t.Error("no preemption happened: the pool is not small enough for the test to mean anything")
				}
				if mode == sched.Swap && (st.SwapOuts == 0 || st.SwapIns == 0) {
					t.Errorf("swap mode: %d swap-outs, %d swap-ins; want both > 0", st.SwapOuts, st.SwapIns)
				}
			})
		}
	}
}

// TestPrefixCache: two requests sharing a long prefix compute it once (the
// second finds it cached, and the counters say so) and give the same output
// as without the cache.
func TestPrefixCache(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	c := loadCases(t, "stories260K")[0]
	prefix := append(slices.Clone(c.PromptIDs), c.GreedyIDs...) // 5 + 48 tokens: 3 full blocks
	a := greedy(append(slices.Clone(prefix), 400), 24)
	b := greedy(append(slices.Clone(prefix), 300, 301), 24)

	off := start(t, m, actors.Config{NoPrefixCaching: true})
	wantA, wantB := run(t, off, copyReq(a)), run(t, off, copyReq(b))

	rt := start(t, m, actors.Config{})
	gotA := run(t, rt, copyReq(a))
	gotB := run(t, rt, copyReq(b))
	st := stats(t, rt)
	full := len(prefix) / 16 * 16
	if gotA.usage.CachedTokens != 0 || gotB.usage.CachedTokens != full {
		t.Errorf("cached tokens: first %d, second %d; want 0 and %d", gotA.usage.CachedTokens, gotB.usage.CachedTokens, full)
	}
	if st.PrefixHits != int64(full) || st.PrefixQueries != int64(len(a.Prompt)+len(b.Prompt)) {
		t.Errorf("prefix cache counters: %d hits of %d queries; want %d of %d", st.PrefixHits, st.PrefixQueries, full, len(a.Prompt)+len(b.Prompt))
	}
	if !slices.Equal(gotA.ids[0], wantA.ids[0]) || !slices.Equal(gotB.ids[0], wantB.ids[0]) {
		t.Errorf("outputs differ with the prefix cache:\n%v\n%v\nwithout:\n%v\n%v", gotA.ids[0], gotB.ids[0], wantA.ids[0], wantB.ids[0])
	}
}

// countingBackend counts the forward passes of a backend.
type countingBackend struct {
	actors.Backend
	calls atomic.Int64
}

func (c *countingBackend) Forward(b *model.Batch, logits []float32) error {
	c.calls.Add(1)
	return c.Backend.Forward(b, logits)
}

// TestReplicas: two device actors on one node share the work, each sequence
// staying on the device that holds its blocks, with the same output.
func TestReplicas(t *testing.T) {
	noLeaks(t)
	const path = "stories260K.gguf"
	m := openModel(t, path)
	reqs := workload(loadCases(t, "stories260K"))
	want := aloneIDs(t, path, m, reqs)
	var backends []actors.Backend
	var counters []*countingBackend
	for range 2 {
		be, err := backend.NewCPU(m, 64, 16, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		c := &countingBackend{Backend: be}
		backends, counters = append(backends, c), append(counters, c)
	}
	rt := start(t, m, actors.Config{Backends: backends, NumBlocks: 64})
	sameAsAlone(t, concurrently(t, rt, reqs), want)
	for i, c := range counters {
		if c.calls.Load() == 0 {
			t.Errorf("device %d ran no step", i)
		}
		t.Logf("device %d: %d steps", i, c.calls.Load())
	}
}
