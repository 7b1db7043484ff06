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
	mr := newModelRunner(t, rng, cfg)
	h := mr.h
	for op := 0; ; op++ {
		draining := mr.added == mr.numAdds
		if draining && h.s.Idle() {
			break
		}
		if op == 20000 {
			mr.fatalf("%d sequences left after %d operations (livelock?)", h.s.Load(), op)
		}
		switch r := rng.IntN(100); {
		case r < 15 && !draining:
			if !mr.add() {
				continue
			}
		case r < 22:
			mr.cancel()
		default:
			mr.step(draining)
		}
		h.check()
	}
	h.checkAllFree()
	for q, want := range mr.refs {
		got := q.Tokens[q.PromptLen:]
		if mr.finished[q] && !slices.Equal(got, want.out) || !mr.finished[q] && !isPrefix(got, want.out) {
			t.Fatalf("seq %d produced %v, alone %v", q.ID, got, want.out)
		}
	}
	return mr.count
}

const (
	modelVocab = 40
	modelEOS   = 0
)

// modelRef is what a sequence produces alone: its output and finish.
type modelRef struct {
	out    []int32
	finish string
}

// modelRunner is one run of TestModelCheck: the harness and what the run
// has done so far.
type modelRunner struct {
	t        *testing.T
	rng      *rand.Rand
	cfg      Config
	h        *harness
	count    map[string]int
	refs     map[*Seq]modelRef
	finished map[*Seq]bool // by Done
	docs     [][]int32
	gone     []kv.SeqID // ids of finished sequences
	numAdds  int
	added    int
	stalls   int
}

func newModelRunner(t *testing.T, rng *rand.Rand, cfg Config) *modelRunner {
	h := newHarness(t, cfg)
	h.modelTokens, h.manualReady, h.eos = true, true, modelEOS
	h.dev.vocab = modelVocab
	mr := &modelRunner{t: t, rng: rng, cfg: cfg, h: h, count: map[string]int{}, refs: map[*Seq]modelRef{},
		finished: map[*Seq]bool{}}
	mr.docs = [][]int32{mr.randTokens(48), mr.randTokens(48), mr.randTokens(48)}
	mr.numAdds = 8 + rng.IntN(24)
	return mr
}

func (mr *modelRunner) randTokens(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = 1 + mr.rng.Int32N(modelVocab-1)
	}
	return p
}

// live lists the live sequences in a stable order.
func (mr *modelRunner) live() []*Seq {
	var l []*Seq
	for _, q := range mr.h.s.seqs {
		l = append(l, q)
	}
	slices.SortFunc(l, func(a, b *Seq) int { return int(a.ID) - int(b.ID) })
	return l
}

func (mr *modelRunner) fatalf(format string, args ...any) {
	mr.t.Helper()
	mr.t.Fatalf("%s\ntrace:\n%s", fmt.Sprintf(format, args...), mr.h.tail())
}

// add adds a random sequence (or tries a live id again, or reuses a
// finished one's); false when it was refused as a live id, an operation
// that is not checked after.
func (mr *modelRunner) add() bool {
	h, rng, cfg := mr.h, mr.rng, mr.cfg
	var p []int32
	switch k := rng.IntN(20); {
	case k == 0:
	case k < 3: // too long for the context, maybe
		p = mr.randTokens(cfg.MaxModelLen - 1 + rng.IntN(3))
	default:
		d := mr.docs[rng.IntN(len(mr.docs))]
		p = slices.Concat(d[:1+rng.IntN(min(len(d), cfg.MaxModelLen*2/3))], mr.randTokens(rng.IntN(5)))
	}
	maxTokens := 0
	if rng.IntN(5) > 0 {
		maxTokens = 1 + rng.IntN(16)
	}
	prio := rng.IntN(3)
	id := kv.SeqID(1000 + mr.added)
	if l := mr.live(); len(l) > 0 && rng.IntN(20) == 0 {
		id = l[rng.IntN(len(l))].ID
	} else if len(mr.gone) > 0 && rng.IntN(10) == 0 { // an id used before
		id = mr.gone[rng.IntN(len(mr.gone))]
		mr.count["id reused"]++
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
			mr.fatalf("Add of a live id %d: %v", id, err)
		}
		mr.count["exists"]++
		return false
	case never:
		if !errors.Is(err, ErrNeverFits) || h.s.Load() != load {
			mr.fatalf("Add of %d tokens, max len %d: %v, want never fits", len(p), maxLen, err)
		}
		mr.count["rejected"]++
	case err != nil:
		mr.fatalf("Add of %d tokens, max len %d: %v", len(p), maxLen, err)
	default:
		if (maxLen-1+cfg.BlockSize-1)/cfg.BlockSize > cfg.NumBlocks {
			mr.count["window long"]++ // fits only because its old blocks are freed
		}
		out, finish := generate(p, maxLen, modelVocab, cfg.Window, modelEOS)
		mr.refs[q] = modelRef{out, finish}
		h.names[id] = fmt.Sprintf("s%d", id)
		mr.count["add"]++
	}
	mr.added++
	return true
}

// cancel finishes a live sequence between steps.
func (mr *modelRunner) cancel() {
	h := mr.h
	if l := mr.live(); len(l) > 0 {
		q := l[mr.rng.IntN(len(l))]
		mr.count["cancel "+q.Status.String()]++
		if !h.s.Finish(q.ID) || q.Status != Finished {
			mr.fatalf("Finish(%d) of a %v sequence", q.ID, q.Status)
		}
		mr.gone = append(mr.gone, q.ID)
		mr.count["cancel"]++
	}
	if h.s.Finish(kv.SeqID(1<<40)) || h.s.Ready(kv.SeqID(1<<40)) {
		mr.fatalf("Finish or Ready of an unknown id")
	}
}

// step marks sequences ready, schedules a step and runs it on the device
// (or fails it), checking the plan and every token against the reference.
func (mr *modelRunner) step(draining bool) {
	h, rng := mr.h, mr.rng
	allReady := true
	for _, q := range mr.live() {
		if draining || rng.IntN(10) < 7 {
			h.s.Ready(q.ID)
		}
		allReady = allReady && q.Ready
	}
	fire, pending := h.s.Trigger()
	if fire && !pending {
		mr.fatalf("trigger fires with nothing pending")
	}
	var st messages.Stats
	h.s.Stats(&st)
	if !h.schedule() {
		if pending && allReady {
			// With every sequence ready, a running one always gets a token;
			// with none running, all blocks are free and the head fits.
			mr.fatalf("nothing scheduled with %d ready sequences", h.s.Load())
		}
		if mr.stalls++; mr.stalls > 1000 {
			mr.fatalf("no step for 1000 tries")
		}
		return
	}
	mr.stalls = 0
	if !pending {
		mr.fatalf("a plan without pending work")
	}
	mr.countPlan(&st)
	if rng.IntN(20) == 0 {
		mr.cancelInFlight()
	}
	if rng.IntN(25) == 0 {
		h.fail()
		mr.count["fail"]++
		if h.last() != "fail: requeue " {
			mr.count["fail requeued"]++
		}
		return
	}
	freed := h.s.blocks.Stats().WindowFreed
	out := h.done()
	if h.s.blocks.Stats().WindowFreed > freed {
		mr.count["window free"]++
	}
	mr.checkOutputs(out)
}

// countPlan counts what the plan just scheduled does (st: the stats before
// it) and checks that preemption victims are the lowest, newest first.
func (mr *modelRunner) countPlan(st *messages.Stats) {
	h, cfg, count := mr.h, mr.cfg, mr.count
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
				mr.fatalf("seq %d preempted, seq %d after it still runs", q.ID, o.ID)
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
}

// cancelInFlight finishes a live sequence while its step runs, and maybe
// adds its id again at once.
func (mr *modelRunner) cancelInFlight() {
	h, rng, cfg := mr.h, mr.rng, mr.cfg
	l := mr.live()
	if len(l) == 0 {
		return
	}
	q := l[rng.IntN(len(l))]
	h.s.Finish(q.ID)
	h.check()
	mr.count["cancel in flight"]++
	if rng.IntN(2) != 0 {
		return
	}
	// its id comes back at once
	p := slices.Concat(q.Tokens[:1+rng.IntN(len(q.Tokens))], mr.randTokens(rng.IntN(3)))
	maxLen := min(cfg.MaxModelLen, len(p)+4)
	if len(p) < cfg.MaxModelLen && maxLen-1 <= cfg.NumBlocks*cfg.BlockSize {
		n, err := h.s.Add(q.ID, p, 4, rng.IntN(3))
		if err != nil {
			mr.fatalf("Add in flight: %v", err)
		}
		out, finish := generate(p, maxLen, modelVocab, cfg.Window, modelEOS)
		mr.refs[n] = modelRef{out, finish}
		h.check()
		mr.count["re-add in flight"]++
	}
}

// checkOutputs checks each sampled token and finish against what the
// sequence produces alone.
func (mr *modelRunner) checkOutputs(out []Outcome) {
	for _, o := range out {
		q, want := o.Seq, mr.refs[o.Seq]
		n := q.NumOutput()
		switch o.Finish {
		case messages.FinishStop:
			if o.Token != modelEOS || want.finish != o.Finish || n != len(want.out) {
				mr.fatalf("seq %d stops after %d tokens with %d, alone after %d (%s)", q.ID, n, o.Token,
					len(want.out), want.finish)
			}
		default:
			if n > len(want.out) || o.Token != want.out[n-1] {
				mr.fatalf("seq %d: token %d is %d, alone %v", q.ID, n, o.Token, want.out)
			}
			last := n == len(want.out)
			if o.Finish == messages.FinishLength && !(last && want.finish == o.Finish) ||
				o.Finish == "" && last && want.finish != messages.FinishStop {
				mr.fatalf("seq %d finishes %q after %d tokens, alone %q after %d", q.ID, o.Finish, n,
					want.finish, len(want.out))
			}
		}
		if o.Finish != "" {
			if q.Status != Finished || mr.h.s.Get(q.ID) == q {
				mr.fatalf("seq %d finished as %v", q.ID, q.Status)
			}
			mr.count["finish "+o.Finish]++
			mr.finished[q] = true
			mr.gone = append(mr.gone, q.ID)
		}
	}
}

func isPrefix(p, of []int32) bool { return len(p) <= len(of) && slices.Equal(p, of[:len(p)]) }
