package actors_test

import (
	"context"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// TestCancel cancels a request (through the context given to Stream) in each
// place one of its sequences can be: waiting for admission, in the middle of
// a chunked prefill, decoding, swapped out to the host tier, before it
// reached the batcher, with two choices of which one already finished, and
// after it finished. The device's forward passes are held at a gate, so the
// cancel lands at exactly that place while a step is on the device. Each
// case checks that the cancelled request ends at once with a Done chunk and
// every unfinished choice "cancelled", that the tokens it got before are the
// ones it gives alone, that a request running beside it is untouched (the
// same tokens as alone), that the batcher dropped the sequence while the step
// was still in flight, and that the runtime ends idle: no sequence, every
// device and host block free, no goroutine left.
func TestCancel(t *testing.T) {
	noLeaksSince(t)
	f := newCancelFixture(t, openModel(t, "stories260K.gguf"))
	for _, tc := range f.cases() {
		t.Run(tc.name, func(t *testing.T) { f.run(t, tc) })
	}
}

// cancelFixture is TestCancel's requests and what each gives alone.
type cancelFixture struct {
	m                                 *model.Model
	bystander, short, long, two, last *messages.GenerateRequest
	ref                               [][][]int32                             // per request, per choice: the tokens alone
	refOf                             map[*messages.GenerateRequest][][]int32 // the same by request, two's choice 0 cut at its stop token
	stopAt                            int                                     // where two's choice 0 stops
}

func newCancelFixture(t *testing.T, m *model.Model) *cancelFixture {
	cases := loadCases(t, "stories260K")
	f := &cancelFixture{m: m}
	// The bystander runs beside the cancelled request in every case.
	f.bystander = greedy(cases[0].PromptIDs, 40) // 45 tokens: 3 blocks
	f.short = greedy(cases[1].PromptIDs, 40)     // 54 tokens: 4 blocks
	f.long = greedy(slices.Concat(cases[1].PromptIDs, cases[1].GreedyIDs), 8)
	// Two seeded choices; choice 0 ends on a stop token early, choice 1
	// runs on (the token is picked below from what they give alone).
	f.two = &messages.GenerateRequest{Prompt: cases[2].PromptIDs, N: 2, MaxTokens: 40,
		Sampling: messages.SamplingParams{Temperature: 0.9, Seed: 7, HasSeed: true}}
	f.last = greedy(cases[3].PromptIDs, 8)
	ref := choicesAlone(t, m, f.bystander, f.short, f.long, f.two, f.last)
	f.ref = ref
	f.refOf = map[*messages.GenerateRequest][][]int32{f.bystander: ref[0], f.short: ref[1], f.long: ref[2], f.two: ref[3], f.last: ref[4]}
	f.stopAt = pickStopToken(t, ref[3][0], ref[3][1])
	f.two.StopTokenIDs = []int32{ref[3][0][f.stopAt]}
	f.refOf[f.two] = [][]int32{ref[3][0][:f.stopAt], ref[3][1]}
	return f
}

// cancelCase is one place a request is cancelled in.
type cancelCase struct {
	name       string
	cfg        actors.Config
	victim     *messages.GenerateRequest
	withBy     bool // the bystander runs too (submitted first)
	preCancel  bool // the context is cancelled before Stream
	postCancel bool // the context is cancelled after the request finished
	// reach drives the held gate until the victim is where it is to be
	// cancelled, a forward pass held; it runs after both requests were
	// submitted and the bystander's first pass arrived.
	reach func(t *testing.T, rt *actors.Runtime, g *gate, v *streamTail)
	// gone says the batcher has dropped the victim (the step still held).
	gone      func(*messages.Stats) bool
	minTokens int      // the victim's tokens before the cancel, at least
	finish    []string // the victim's finish reasons
}

// runningOnly is a gone check: n sequences running, none waiting or
// swapped.
func runningOnly(n int) func(*messages.Stats) bool {
	return func(st *messages.Stats) bool { return st.Running == n && st.Waiting == 0 && st.Swapped == 0 }
}

func (f *cancelFixture) cases() []cancelCase {
	return []cancelCase{{
		name:   "waiting",
		cfg:    actors.Config{MaxNumSeqs: 1},
		victim: f.short, withBy: true,
		reach: func(t *testing.T, rt *actors.Runtime, g *gate, v *streamTail) {
			pollStats(t, rt, "the victim waiting", func(st *messages.Stats) bool { return st.Running == 1 && st.Waiting == 1 })
		},
		gone:   runningOnly(1),
		finish: []string{messages.FinishCancelled},
	}, {
		name:   "mid-prefill",
		cfg:    actors.Config{MaxNumBatchedTokens: 8},
		victim: f.long, withBy: true,
		reach:  f.reachMidPrefill,
		gone:   runningOnly(1),
		finish: []string{messages.FinishCancelled},
	}, {
		name:   "mid-decode",
		victim: f.short, withBy: true,
		reach: func(t *testing.T, rt *actors.Runtime, g *gate, v *streamTail) {
			// The bystander's prefill is held at the gate. Once the batcher
			// has the victim (submitted is not yet there: its sequence
			// actor's message may come after step 2 is formed on a loaded
			// machine), it joins the next step and takes a token from each
			// step after. Once the gate holds step 5, steps 2 to 4 have
			// given it three tokens, on their way to its stream.
			pollStats(t, rt, "the victim at the batcher", func(st *messages.Stats) bool { return st.Running+st.Waiting == 2 })
			for range 4 {
				g.step(t)
				g.next(t)
			}
			v.waitTokens(3)
		},
		gone:      runningOnly(1),
		minTokens: 3,
		finish:    []string{messages.FinishCancelled},
	}, {
		// 4 blocks: the bystander needs 3, the victim 4; the victim, the
		// newer, is swapped out when the two of them need a fifth.
		name:   "swapped",
		cfg:    actors.Config{NumBlocks: 4, NumHostBlocks: 4, Preemption: sched.Swap},
		victim: f.short, withBy: true,
		reach: reachSwapped,
		gone: func(st *messages.Stats) bool {
			return runningOnly(1)(st) && st.FreeHostBlocks == st.HostBlocks
		},
		minTokens: 1,
		finish:    []string{messages.FinishCancelled},
	}, {
		name:   "before-admission",
		victim: f.short, withBy: true, preCancel: true,
		reach:  func(t *testing.T, rt *actors.Runtime, g *gate, v *streamTail) {},
		gone:   runningOnly(1),
		finish: []string{messages.FinishCancelled},
	}, {
		name:   "n=2, one choice stopped",
		victim: f.two, withBy: true,
		reach: func(t *testing.T, rt *actors.Runtime, g *gate, v *streamTail) {
			for g.step(t); ; g.step(t) {
				g.next(t)
				if v.poll(); v.finish[0] != "" && len(v.ids[1]) > f.stopAt {
					return
				}
			}
		},
		gone:      runningOnly(1),
		minTokens: 2 * f.stopAt,
		finish:    []string{messages.FinishStop, messages.FinishCancelled},
	}, {
		name:   "after it finished",
		victim: f.last, postCancel: true,
		finish: []string{messages.FinishLength},
	}}
}

// reachMidPrefill steps until a middle chunk of the long prompt is on the
// device.
func (f *cancelFixture) reachMidPrefill(t *testing.T, rt *actors.Runtime, g *gate, v *streamTail) {
	n := int32(len(f.long.Prompt))
	for g.step(t); ; g.step(t) {
		c := g.next(t)
		if slices.ContainsFunc(c.seqs, func(s span) bool { return s.prefill() && s.to < n-1 }) {
			return
		}
	}
}

// reachSwapped steps until the victim is swapped out.
func reachSwapped(t *testing.T, rt *actors.Runtime, g *gate, v *streamTail) {
	for g.step(t); ; g.step(t) {
		g.next(t)
		st, err := rt.Stats(gateWait)
		if err != nil {
			t.Fatal(err)
		}
		if st.Swapped == 1 {
			if st.SwapOuts != 1 || st.Running != 1 || st.FreeHostBlocks == st.HostBlocks {
				t.Fatalf("swapped, but stats %+v", st)
			}
			return
		}
	}
}

// run runs one case: the bystander (if any) and the victim on a runtime
// whose forward passes are held at a gate, the cancel where the case says,
// then the checks.
func (f *cancelFixture) run(t *testing.T, tc cancelCase) {
	noLeaksSince(t)
	cfg := tc.cfg
	g := newGate(cpuBackendFor(t, f.m, orDefaultInt(cfg.NumBlocks, 256), cfg.NumHostBlocks))
	cfg.NumBlocks, cfg.Backends = orDefaultInt(cfg.NumBlocks, 256), []actors.Backend{g}
	rt := start(t, f.m, cfg)
	t.Cleanup(g.free) // before start's cleanup stops the runtime
	g.hold()

	var by *streamTail
	if tc.withBy {
		by = newStreamTail(t, streamOrFail(t, rt, context.Background(), copyReq(f.bystander)), 1)
		g.next(t) // the bystander's prefill is on the device: it is the older
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if tc.preCancel {
		cancel()
	}
	victim := copyReq(tc.victim)
	n := max(victim.N, 1)
	v := newStreamTail(t, streamOrFail(t, rt, ctx, victim), n)
	if tc.postCancel {
		g.free()
		v.wait()
		cancel()
	} else {
		if !tc.preCancel { // every sequence is in the schedule before the first step is let go
			seqs := n
			if by != nil {
				seqs++
			}
			pollStats(t, rt, "the victim scheduled", func(st *messages.Stats) bool {
				return st.Running+st.Waiting+st.Swapped == seqs
			})
		}
		tc.reach(t, rt, g, v)
		cancel()
		v.wait() // with a step held on the device
		pollStats(t, rt, "the victim dropped", tc.gone)
		g.free()
	}
	if by != nil {
		by.wait()
		if !slices.Equal(by.ids[0], f.ref[0][0]) || by.finish[0] != messages.FinishLength {
			t.Errorf("bystander: %v %s %s\nwant %v (alone)", by.ids[0], by.finish[0], by.errs[0], f.ref[0][0])
		}
	}
	f.checkVictim(t, tc, v, victim)
	pollStats(t, rt, "idle", idleStats)

	// The runtime still serves.
	if r := run(t, rt, copyReq(f.bystander)); !slices.Equal(r.ids[0], f.ref[0][0]) {
		t.Errorf("after the cancel: %v\nwant %v", r.ids[0], f.ref[0][0])
	}
}

// checkVictim checks the cancelled request's finish reasons, its tokens
// against what it gives alone, and its usage.
func (f *cancelFixture) checkVictim(t *testing.T, tc cancelCase, v *streamTail, victim *messages.GenerateRequest) {
	t.Helper()
	if !slices.Equal(v.finish, tc.finish) {
		t.Errorf("finish %q (%q), want %q", v.finish, v.errs, tc.finish)
	}
	want := f.refOf[tc.victim]
	for c := range max(victim.N, 1) {
		got := v.ids[c]
		if v.finish[c] != messages.FinishCancelled {
			if !slices.Equal(got, want[c]) {
				t.Errorf("choice %d: %v\nwant %v (alone)", c, got, want[c])
			}
			continue
		}
		if len(got) > len(want[c]) || !slices.Equal(got, want[c][:len(got)]) {
			t.Errorf("choice %d: %v\nnot a prefix of %v (alone)", c, got, want[c])
		}
		if v.errs[c] != context.Canceled.Error() {
			t.Errorf("choice %d: cancelled with err %q", c, v.errs[c])
		}
	}
	if got := v.tokens(); got < tc.minTokens || (tc.minTokens == 0 && !tc.postCancel && got > 0) {
		t.Errorf("the victim got %d tokens before its cancel; want at least %d (0 if 0)", got, tc.minTokens)
	}
	if u := v.done.Usage; u == nil || u.CompletionTokens != v.tokens() || u.PromptTokens != len(victim.Prompt) {
		t.Errorf("usage %+v for %d tokens", u, v.tokens())
	}
}

// pickStopToken returns an index i into a (a few tokens in) whose token is
// neither earlier in a nor in the first 3*i+8 tokens of b: as a stop token
// it ends a there and leaves b running.
func pickStopToken(t *testing.T, a, b []int32) int {
	for i := 2; i < min(8, len(a)); i++ {
		if !slices.Contains(a[:i], a[i]) && !slices.Contains(b[:min(len(b), 3*i+8)], a[i]) {
			return i
		}
	}
	t.Fatalf("no stop token in %v that %v lacks", a, b)
	return 0
}

func idleStats(st *messages.Stats) bool {
	return st.Running+st.Waiting+st.Swapped == 0 && st.NumFreeBlocks == st.NumBlocks && st.FreeHostBlocks == st.HostBlocks
}

// orDefaultInt returns v, or def when v is 0.
func orDefaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
