package actors_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// windowShape is a Gemma 3 whose every layer has a sliding window of 8: 2
// layers under the real pattern of 6 (5 local, then 1 global), so the one
// global layer never comes. globalShape is the same with a pattern of 2, its
// second layer global.
var (
	windowShape = synth.Shape{Name: "gemma3-window8", Arch: "gemma3", Dim: 64, Layers: 2, Heads: 2, KVHeads: 1,
		HeadDim: 32, FFN: 128, Vocab: 512, Context: 512, RopeBase: 1000000, NormEps: 1e-6, Tied: true,
		Window: 8, SWAPattern: 6}
	globalShape = func() synth.Shape { s := windowShape; s.Name, s.SWAPattern = "gemma3-global", 2; return s }()
)

// synthModel writes shape (Q8_0, seed 7) with stories260K's vocabulary and
// opens it.
func synthModel(t *testing.T, shape synth.Shape) *model.Model {
	t.Helper()
	return reftest.Open(t, synthtest.WriteShape(t, shape, "Q8_0", "stories260K.gguf", 7))
}

// keepAll is a Backend that does not say it reads only a window (it hides
// the CPU backend's KVWindow), so the batcher frees nothing behind one.
type keepAll struct{ actors.Backend }

// windowRequests are greedy requests generating far past the window (8):
// four sharing their first 8 prompt tokens (prefix hits), one longer.
func windowRequests() []*messages.GenerateRequest {
	shared := []int32{1, 400, 33, 250, 17, 90, 311, 5}
	var reqs []*messages.GenerateRequest
	for i := range int32(4) {
		reqs = append(reqs, &messages.GenerateRequest{Prompt: append(slices.Clone(shared), 40+i, 7*i+3),
			MaxTokens: 56 + int(i), IgnoreEOS: true})
	}
	long := make([]int32, 37)
	for i := range long {
		long[i] = int32(1 + i*13%500)
	}
	return append(reqs, &messages.GenerateRequest{Prompt: long, MaxTokens: 60, IgnoreEOS: true})
}

// runAll streams every request at once, runs each of then once
// they are all sent, and returns each request's ids.
func runAll(t *testing.T, rt *actors.Runtime, reqs []*messages.GenerateRequest, then ...func()) [][]int32 {
	t.Helper()
	chans := streamAll(t, rt, reqs)
	for _, f := range then {
		f()
	}
	var out [][]int32
	for i, ch := range chans {
		r := collect(t, ch, 1)
		if r.errs[0] != "" || r.finish[0] != messages.FinishLength || len(r.ids[0]) != reqs[i].MaxTokens {
			t.Fatalf("request %d: %d tokens, finish %q %s", i, len(r.ids[0]), r.finish[0], r.errs[0])
		}
		out = append(out, r.ids[0])
	}
	return out
}

// TestWindowFree: on a model whose every layer has a sliding window, the
// batcher frees each sequence's blocks behind the window, and the outputs
// are the ids of the same requests with nothing freed, bit for bit: one at a
// time and all at once, by recompute and by swap under a pool too small for
// them, with and without the prefix cache, on an f16 and a Q8_0 cache.
func TestWindowFree(t *testing.T) {
	noLeaks(t)
	m := synthModel(t, windowShape)
	if w := m.Config.KVWindow(); w != 8 {
		t.Fatalf("KVWindow %d, want 8", w)
	}
	reqs := windowRequests()
	for _, typ := range []kv.CacheType{kv.F16, kv.Q8_0} {
		// The reference: nothing freed, blocks for everyone.
		be, err := backend.NewCPUWithCache(m, typ, 256, 4, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref := start(t, m, actors.Config{Backends: []actors.Backend{keepAll{be}}})
		var want [][]int32
		for _, req := range reqs {
			want = append(want, runAll(t, ref, []*messages.GenerateRequest{req})[0])
		}
		for _, tc := range []struct {
			name      string
			cfg       actors.Config
			alone     bool
			preempted bool // the pool is too small: some sequence must be preempted
		}{
			{"alone", actors.Config{NumBlocks: 64}, true, false},
			{"together", actors.Config{NumBlocks: 64}, false, false},
			{"recompute", actors.Config{NumBlocks: 8, MaxNumBatchedTokens: 8}, false, true},
			{"swap", actors.Config{NumBlocks: 8, MaxNumBatchedTokens: 8, Preemption: sched.Swap}, false, true},
			{"swap without prefix cache", actors.Config{NumBlocks: 8, MaxNumBatchedTokens: 8, Preemption: sched.Swap,
				NoPrefixCaching: true}, false, true},
		} {
			t.Run(typ.String()+"/"+tc.name, func(t *testing.T) {
				cfg := tc.cfg
				cfg.BlockSize, cfg.KVCacheType = 4, typ
				var got [][]int32
				if tc.alone {
					rt := start(t, m, cfg)
					for _, req := range reqs {
						got = append(got, runAll(t, rt, []*messages.GenerateRequest{req})[0])
					}
					sameIDs(t, got, want)
					checkWindowStats(t, rt, cfg, tc.preempted)
					return
				}
				// Every request waits at the batcher before the first
				// step runs, so the pool is as short as the case says
				// however the machine schedules the test.
				host := 0
				if cfg.Preemption == sched.Swap {
					host = cfg.NumBlocks
				}
				be, err := backend.NewCPUWithCache(m, typ, cfg.NumBlocks, cfg.BlockSize, host, 1)
				if err != nil {
					t.Fatal(err)
				}
				g := newGate(be)
				g.hold()
				cfg.Backends = []actors.Backend{windowGate{g}}
				rt := start(t, m, cfg)
				got = runAll(t, rt, reqs, func() {
					pollStats(t, rt, "every request at the batcher", func(st *messages.Stats) bool { return st.Running+st.Waiting == len(reqs) })
					g.free()
				})
				sameIDs(t, got, want)
				checkWindowStats(t, rt, cfg, tc.preempted)
			})
		}
	}
}

// sameIDs compares each request's ids with those it gives with nothing
// freed.
func sameIDs(t *testing.T, got, want [][]int32) {
	t.Helper()
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("request %d: %v\nnothing freed: %v", i, got[i], want[i])
		}
	}
}

// checkWindowStats checks that a TestWindowFree case did what it is meant
// to: preempted (and swapped) where the pool is short, and hit the prefix
// cache where it is on.
func checkWindowStats(t *testing.T, rt *actors.Runtime, cfg actors.Config, preempted bool) {
	t.Helper()
	st := stats(t, rt)
	t.Logf("stats: preemptions %d, swap outs %d, swap ins %d, prefix hits %d of %d",
		st.Preemptions, st.SwapOuts, st.SwapIns, st.PrefixHits, st.PrefixQueries)
	if preempted && st.Preemptions == 0 {
		t.Error("no preemption: the case checks nothing it is meant to")
	}
	if cfg.Preemption == sched.Swap && st.SwapOuts == 0 {
		t.Error("no swap-out")
	}
	if !cfg.NoPrefixCaching && st.PrefixHits == 0 {
		t.Error("no prefix hit")
	}
}

// windowGate is a gate that keeps its CPU backend's sliding window (the
// batcher frees blocks behind it).
type windowGate struct{ *gate }

func (w windowGate) KVWindow() int { return w.Backend.(actors.WindowBackend).KVWindow() }

// watchTables is a CPU backend that checks the block tables of every step
// before it runs it: a table must have exactly the blocks wholly before its
// first token's window freed (kv.NoBlock), none after. It records the most
// blocks a table held.
type watchTables struct {
	*backend.CPU
	window int
	peak   int
	err    error
}

func (w *watchTables) Forward(b *model.Batch, logits []float32) error {
	bs := w.BlockSize()
	for s, table := range b.BlockTables {
		first := b.Positions[slices.Index(b.Seq, int32(s))]
		dead := kv.NumFreed(table)
		if want := kv.WindowStart(int(first), w.window) / bs; (dead != want || slices.Contains(table[dead:], kv.NoBlock)) && w.err == nil {
			w.err = fmt.Errorf("a step from position %d has the table %v, want %d blocks freed", first, table, want)
		}
		w.peak = max(w.peak, len(table)-dead)
	}
	return w.CPU.Forward(b, logits)
}

// TestWindowBlocks: a long generation on a model whose every layer has a
// window holds only the blocks of its window: at every step exactly the
// blocks wholly before its first token's window are freed, it holds at most
// ceil(window/block)+1 blocks (3 here), and it runs on a device of 5 blocks
// (a window and a step: Add accepts it, and it is never preempted), far
// fewer than its 26. A model with a global layer frees nothing.
func TestWindowBlocks(t *testing.T) {
	noLeaks(t)
	prompt := []int32{1, 400, 33, 250, 17, 90}
	const maxTokens = 98 // 104 positions: 26 blocks of 4
	for _, tc := range []struct {
		name      string
		shape     synth.Shape
		window    int
		numBlocks int
		peak      int // the most blocks the sequence holds
	}{
		{"every layer windowed", windowShape, 8, 5, 3},
		{"a global layer", globalShape, 0, 32, 26},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := synthModel(t, tc.shape)
			cpu, err := backend.NewCPU(m, tc.numBlocks, 4, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if cpu.KVWindow() != tc.window {
				t.Fatalf("the backend's window is %d, want %d", cpu.KVWindow(), tc.window)
			}
			w := &watchTables{CPU: cpu, window: tc.window}
			rt := start(t, m, actors.Config{Backends: []actors.Backend{w}, NumBlocks: tc.numBlocks, BlockSize: 4, MaxNumBatchedTokens: 8})
			r := run(t, rt, &messages.GenerateRequest{Prompt: slices.Clone(prompt), MaxTokens: maxTokens, IgnoreEOS: true})
			if r.errs[0] != "" || len(r.ids[0]) != maxTokens {
				t.Fatalf("%d tokens, %s", len(r.ids[0]), r.errs[0])
			}
			st := stats(t, rt)
			// 104 positions, the last one sampled, never computed: blocks
			// #0..#23 of the 26 fall behind its window (from position 96).
			freed := int64(kv.WindowStart(maxTokens+len(prompt)-1, tc.window) / 4)
			if w.err != nil || w.peak != tc.peak || st.Preemptions != 0 || st.WindowFreedBlocks != freed {
				t.Fatalf("%v; at most %d blocks held (want %d), %d preemptions, %d blocks freed behind the window (want %d)",
					w.err, w.peak, tc.peak, st.Preemptions, st.WindowFreedBlocks, freed)
			}
			t.Logf("%d tokens generated; at most %d blocks held at once", maxTokens, w.peak)
		})
	}
}
