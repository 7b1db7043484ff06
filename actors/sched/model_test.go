package sched

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

// TestModelCheck drives random interleavings of Add (random prompts over a
// few shared documents, priorities, lengths and max tokens), Ready, Finish
// between steps and in flight, Schedule, Done and Fail, on small block pools
// in both preemption modes, against the simulated device of harness_test.go,
// whose tokens come from the fake model reading its K/V through the block
// tables. After every operation it checks the scheduler's invariants and the
// device's content (check); every sampled token must be the one the sequence
// produces alone, so chunking, prefix hits, recompute and swap preserve the
// outputs; once the adds stop, every sequence must finish within a bounded
// number of steps with all of them ready; then every device and host block
// must be free.
func TestModelCheck(t *testing.T) {
	runs := 600
	if testing.Short() {
		runs = 50
	}
	total := map[string]int{}
	for run := range runs {
		rng := rand.New(rand.NewPCG(uint64(run), 0x5eed))
		cfg := randomConfig(rng)
		if run%2 == 1 { // a model whose every layer has a sliding window (the same draws otherwise)
			cfg.Window = 2 + run/2%11
		}
		var count map[string]int
		t.Run(fmt.Sprintf("%d", run), func(t *testing.T) {
			count = modelRun(t, rng, cfg)
		})
		if t.Failed() {
			t.Fatalf("run %d, config %+v", run, cfg)
		}
		for k, v := range count {
			total[k] += v
		}
	}
	t.Logf("%v", total)
	// The runs must have exercised what they check.
	for _, k := range []string{
		"add", "rejected", "exists", "step", "chunked", "hit", "preempt recompute", "preempt swap",
		"swap fallback", "swap in", "self-preempt", "cancel waiting", "cancel running", "cancel swapped",
		"cancel in flight", "re-add in flight", "id reused", "fail", "fail requeued",
		"finish stop", "finish length", "resume",
		"window free", "window long", "window hit", "window swap", "window swap in",
	} {
		if total[k] == 0 {
			t.Errorf("no %q in %d runs", k, runs)
		}
	}
}

func randomConfig(rng *rand.Rand) Config {
	bs := 1 + rng.IntN(4)
	c := Config{
		MaxNumSeqs:          1 + rng.IntN(6),
		MaxNumBatchedTokens: 1 + rng.IntN(24),
		MaxModelLen:         12 + rng.IntN(36),
		BlockSize:           bs,
		NoPrefixCaching:     rng.IntN(5) == 0,
	}
	// From half a context to two: preemptions are common, rejections rare.
	c.NumBlocks = max(2, (c.MaxModelLen/2+rng.IntN(c.MaxModelLen*3/2))/bs)
	if rng.IntN(2) == 0 {
		c.Preemption = Swap
		c.NumHostBlocks = rng.IntN(c.NumBlocks + 1)
	}
	return c
}

// modelRun is one random run; it returns how often each event happened.
func modelRun(t *testing.T, rng *rand.Rand, cfg Config) map[string]int {
	const (
		vocab = 40
		eos   = 0
	)
	h := newHarness(t, cfg)
	h.modelTokens, h.manualReady, h.eos = true, true, eos
	h.dev.vocab = vocab
	count := map[string]int{}
	type ref struct {
		out    []int32
		finish string
	}
	refs := map[*Seq]ref{}
	finished := map[*Seq]bool{} // by Done
	randTokens := func(n int) []int32 {
		p := make([]int32, n)
		for i := range p {
			p[i] = 1 + rng.Int32N(vocab-1)
		}
		return p
	}
	docs := [][]int32{randTokens(48), randTokens(48), randTokens(48)}
	live := func() []*Seq { // in a stable order
		var l []*Seq
		for _, q := range h.s.seqs {
			l = append(l, q)
		}
		slices.SortFunc(l, func(a, b *Seq) int { return int(a.ID) - int(b.ID) })
		return l
	}
	fatalf := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\ntrace:\n%s", fmt.Sprintf(format, args...), h.tail())
	}

	var gone []kv.SeqID // ids of finished sequences
	numAdds := 8 + rng.IntN(24)
	added, stalls := 0, 0
	for op := 0; ; op++ {
		draining := added == numAdds
		if draining && h.s.Idle() {
			break
		}
		if op == 20000 {
			fatalf("%d sequences left after %d operations (livelock?)", h.s.Load(), op)
		}
		switch r := rng.IntN(100); {
		case r < 15 && !draining: // add
			var p []int32
			switch k := rng.IntN(20); {
			case k == 0:
			case k < 3: // too long for the context, maybe
				p = randTokens(cfg.MaxModelLen - 1 + rng.IntN(3))
			default:
				d := docs[rng.IntN(len(docs))]
				p = slices.Concat(d[:1+rng.IntN(min(len(d), cfg.MaxModelLen*2/3))], randTokens(rng.IntN(5)))
			}
			maxTokens := 0
			if rng.IntN(5) > 0 {
				maxTokens = 1 + rng.IntN(16)
			}
			prio := rng.IntN(3)
			id := kv.SeqID(1000 + added)
			if l := live(); len(l) > 0 && rng.IntN(20) == 0 {
				id = l[rng.IntN(len(l))].ID
			} else if len(gone) > 0 && rng.IntN(10) == 0 { // an id used before
				id = gone[rng.IntN(len(gone))]
				count["id reused"]++
			}
			maxLen := cfg.MaxModelLen
			if maxTokens > 0 {
				maxLen = min(maxLen, len(p)+maxTokens)
			}
			never := len(p) == 0 || len(p) >= cfg.MaxModelLen || cfg.BlocksNeeded(maxLen) > cfg.NumBlocks
			exists := h.s.Get(id) != nil
			load := h.s.Load()
			q, err := h.s.Add(id, p, maxTokens, prio)
			switch {
			case exists:
				if !errors.Is(err, kv.ErrSeqExists) || h.s.Load() != load {
					fatalf("Add of a live id %d: %v", id, err)
				}
				count["exists"]++
				continue
			case never:
				if !errors.Is(err, ErrNeverFits) || h.s.Load() != load {
					fatalf("Add of %d tokens, max len %d: %v, want never fits", len(p), maxLen, err)
				}
				count["rejected"]++
			case err != nil:
				fatalf("Add of %d tokens, max len %d: %v", len(p), maxLen, err)
			default:
				if (maxLen-1+cfg.BlockSize-1)/cfg.BlockSize > cfg.NumBlocks {
					count["window long"]++ // fits only because its old blocks are freed
				}
				out, finish := generate(p, maxLen, vocab, cfg.Window, eos)
				refs[q] = ref{out, finish}
				h.names[id] = fmt.Sprintf("s%d", id)
				count["add"]++
			}
			added++
		case r < 22: // cancel between steps
			if l := live(); len(l) > 0 {
				q := l[rng.IntN(len(l))]
				count["cancel "+q.Status.String()]++
				if !h.s.Finish(q.ID) || q.Status != Finished {
					fatalf("Finish(%d) of a %v sequence", q.ID, q.Status)
				}
				gone = append(gone, q.ID)
				count["cancel"]++
			}
			if h.s.Finish(kv.SeqID(1<<40)) || h.s.Ready(kv.SeqID(1<<40)) {
				fatalf("Finish or Ready of an unknown id")
			}
		default: // a step
			allReady := true
			for _, q := range live() {
				if draining || rng.IntN(10) < 7 {
					h.s.Ready(q.ID)
				}
				allReady = allReady && q.Ready
			}
			fire, pending := h.s.Trigger()
			if fire && !pending {
				fatalf("trigger fires with nothing pending")
			}
			var st messages.Stats
			h.s.Stats(&st)
			if !h.schedule() {
				if pending && allReady {
					// With every sequence ready, a running one always gets a token;
					// with none running, all blocks are free and the head fits.
					fatalf("nothing scheduled with %d ready sequences", h.s.Load())
				}
				if stalls++; stalls > 1000 {
					fatalf("no step for 1000 tries")
				}
				break
			}
			stalls = 0
			if !pending {
				fatalf("a plan without pending work")
			}
			p := h.plan
			count["step"]++
			var after messages.Stats
			h.s.Stats(&after)
			if after.PrefixHits > st.PrefixHits {
				count["hit"]++
				if cfg.Window > 0 {
					count["window hit"]++
				}
			}
			for _, q := range p.Preempted {
				count["preempt "+map[Status]string{Swapped: "swap", Waiting: "recompute"}[q.Status]]++
				if q.Status == Waiting && cfg.Preemption == Swap {
					count["swap fallback"]++
				}
				if q.Status == Swapped && kv.NumFreed(q.host) > 0 {
					count["window swap"]++
				}
				for _, o := range h.s.running { // victims are the lowest, newest first
					if !before(o, q) {
						fatalf("seq %d preempted, seq %d after it still runs", q.ID, o.ID)
					}
				}
			}
			if len(p.Preempted) > 0 && len(p.Chunks) == 0 {
				count["self-preempt"]++
			}
			if len(p.SwapIn) > 0 {
				count["swap in"]++
			}
			if len(p.Resumed) > 0 {
				count["resume"]++
			}
			for _, q := range p.Resumed {
				if len(p.SwapIn) > 0 && kv.NumFreed(h.s.BlockTable(q)) > 0 {
					count["window swap in"]++
				}
			}
			for _, c := range p.Chunks {
				if !c.Logits {
					count["chunked"]++
				}
			}
			if rng.IntN(20) == 0 { // cancel in flight
				if l := live(); len(l) > 0 {
					q := l[rng.IntN(len(l))]
					h.s.Finish(q.ID)
					h.check()
					count["cancel in flight"]++
					if rng.IntN(2) == 0 { // and its id comes back at once
						p := slices.Concat(q.Tokens[:1+rng.IntN(len(q.Tokens))], randTokens(rng.IntN(3)))
						maxLen := min(cfg.MaxModelLen, len(p)+4)
						if len(p) < cfg.MaxModelLen && maxLen-1 <= cfg.NumBlocks*cfg.BlockSize {
							n, err := h.s.Add(q.ID, p, 4, rng.IntN(3))
							if err != nil {
								fatalf("Add in flight: %v", err)
							}
							out, finish := generate(p, maxLen, vocab, cfg.Window, eos)
							refs[n] = ref{out, finish}
							h.check()
							count["re-add in flight"]++
						}
					}
				}
			}
			if rng.IntN(25) == 0 {
				h.fail()
				count["fail"]++
				if h.last() != "fail: requeue " {
					count["fail requeued"]++
				}
				break
			}
			freed := h.s.blocks.Stats().WindowFreed
			out := h.done()
			if h.s.blocks.Stats().WindowFreed > freed {
				count["window free"]++
			}
			for _, o := range out {
				q, want := o.Seq, refs[o.Seq]
				n := q.NumOutput()
				switch o.Finish {
				case messages.FinishStop:
					if o.Token != eos || want.finish != o.Finish || n != len(want.out) {
						fatalf("seq %d stops after %d tokens with %d, alone after %d (%s)", q.ID, n, o.Token,
							len(want.out), want.finish)
					}
				default:
					if n > len(want.out) || o.Token != want.out[n-1] {
						fatalf("seq %d: token %d is %d, alone %v", q.ID, n, o.Token, want.out)
					}
					last := n == len(want.out)
					if o.Finish == messages.FinishLength && !(last && want.finish == o.Finish) ||
						o.Finish == "" && last && want.finish != messages.FinishStop {
						fatalf("seq %d finishes %q after %d tokens, alone %q after %d", q.ID, o.Finish, n,
							want.finish, len(want.out))
					}
				}
				if o.Finish != "" {
					if q.Status != Finished || h.s.Get(q.ID) == q {
						fatalf("seq %d finished as %v", q.ID, q.Status)
					}
					count["finish "+o.Finish]++
					finished[q] = true
					gone = append(gone, q.ID)
				}
			}
		}
		h.check()
	}
	h.checkAllFree()
	for q, want := range refs {
		got := q.Tokens[q.PromptLen:]
		if finished[q] && !slices.Equal(got, want.out) || !finished[q] && !isPrefix(got, want.out) {
			t.Fatalf("seq %d produced %v, alone %v", q.ID, got, want.out)
		}
	}
	return count
}

func isPrefix(p, of []int32) bool { return len(p) <= len(of) && slices.Equal(p, of[:len(p)]) }
