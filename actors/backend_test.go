package actors_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/internal/leaktest"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// Test backends: a CPU backend wrapped so a test controls when a forward
// pass runs (gate), makes it panic (faulty), or lies about its blocks
// (fewBlocks). They sit under the device actor exactly where a CUDA backend
// would.

// gateWait bounds every wait of these tests: long enough for -race on a busy
// machine, short enough that a hang shows as a failure.
const gateWait = 2 * time.Minute

// cpuBackendFor returns a CPU backend for m with numBlocks device blocks of 16
// tokens and numHostBlocks host-tier blocks.
func cpuBackendFor(t testing.TB, m *model.Model, numBlocks, numHostBlocks int) *backend.CPU {
	t.Helper()
	be, err := backend.NewCPU(m, numBlocks, 16, numHostBlocks, 1)
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// gate is a Backend whose Forward calls the test holds and releases one at
// a time. While the gate is held, each call announces itself on arrived and
// blocks until the test sends on release (or opens the gate): the device
// actor is stuck in the forward pass, while the batcher, the requests and
// the sequences keep receiving messages. An open gate lets every call run.
type gate struct {
	actors.Backend
	arrived chan fwdCall
	release chan struct{}

	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
}

// fwdCall is what the test sees of one Forward call: each batch sequence's
// positions, in batch order.
type fwdCall struct {
	seqs []span
}

// span is the positions [from, to] of one sequence's tokens in a call.
type span struct{ from, to int32 }

// prefill reports whether the span continues a prompt chunk by chunk: it has
// several tokens and does not start at position 0.
func (s span) prefill() bool { return s.from > 0 && s.to > s.from }

func newGate(be actors.Backend) *gate {
	open := make(chan struct{})
	close(open)
	return &gate{Backend: be, arrived: make(chan fwdCall), release: make(chan struct{}), open: open}
}

func (g *gate) Forward(b *model.Batch, logits []float32) error {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
	case g.arrived <- describeBatch(b):
		select {
		case <-g.release:
		case <-open:
		}
	}
	return g.Backend.Forward(b, logits)
}

func describeBatch(b *model.Batch) fwdCall {
	c := fwdCall{seqs: make([]span, len(b.BlockTables))}
	for i := range c.seqs {
		c.seqs[i] = span{from: -1, to: -1}
	}
	for i, pos := range b.Positions {
		s := &c.seqs[b.Seq[i]]
		if s.from < 0 || pos < s.from {
			s.from = pos
		}
		s.to = max(s.to, pos)
	}
	return c
}

// hold makes the next Forward calls wait for the test.
func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

// free opens the gate: the call held now, if any, and every later one run.
func (g *gate) free() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// next waits for the next Forward call to arrive at the held gate.
func (g *gate) next(t testing.TB) fwdCall {
	t.Helper()
	select {
	case c := <-g.arrived:
		return c
	case <-time.After(gateWait):
		t.Fatal("no forward pass arrived at the gate")
		return fwdCall{}
	}
}

// step lets the call held at the gate run.
func (g *gate) step(t testing.TB) {
	t.Helper()
	select {
	case g.release <- struct{}{}:
	case <-time.After(gateWait):
		t.Fatal("no forward pass waiting at the gate")
	}
}

// faulty is a Backend whose Forward panics on the calls fail picks (counted
// from 1), before touching the KV cache, as with a broken invariant in a
// kernel; and whose SwapOut and SwapIn panic, before copying, on the calls
// failSwapOut and failSwapIn pick (nil: none). The device actor fails inside
// a step or a block copy.
type faulty struct {
	actors.Backend
	fail                    func(call int64, b *model.Batch) bool
	failSwapOut, failSwapIn func(call int64) bool
	start                   chan struct{} // if not nil, Forward waits until it is closed

	calls, swapOuts, swapIns atomic.Int64
	panics                   atomic.Int64 // all kinds
	lost                     atomic.Int64 // sequences in the batches that panicked
}

func (f *faulty) Forward(b *model.Batch, logits []float32) error {
	if f.start != nil {
		<-f.start
	}
	if n := f.calls.Add(1); f.fail != nil && f.fail(n, b) {
		f.panics.Add(1)
		f.lost.Add(int64(len(b.BlockTables)))
		panic(fmt.Sprintf("faulty backend: forward call %d", n))
	}
	return f.Backend.Forward(b, logits)
}

func (f *faulty) SwapOut(copies []messages.BlockCopy) error {
	if n := f.swapOuts.Add(1); f.failSwapOut != nil && f.failSwapOut(n) {
		f.panics.Add(1)
		panic(fmt.Sprintf("faulty backend: swap-out %d", n))
	}
	return f.Backend.SwapOut(copies)
}

func (f *faulty) SwapIn(copies []messages.BlockCopy) error {
	if n := f.swapIns.Add(1); f.failSwapIn != nil && f.failSwapIn(n) {
		f.panics.Add(1)
		panic(fmt.Sprintf("faulty backend: swap-in %d", n))
	}
	return f.Backend.SwapIn(copies)
}

// fewBlocks is a Backend that offers the scheduler only numBlocks of its
// blocks, fewer than the runtime's Config says.
type fewBlocks struct {
	actors.Backend
	numBlocks int
}

func (f *fewBlocks) NumBlocks() int { return f.numBlocks }

// noLeaksSince fails the test, at its end, if a goroutine started after
// this call is still running. The goroutines running now are the baseline:
// the snapshot is taken here, not at cleanup, where it would excuse every
// leak. Call it first, so its cleanup runs after every other.
//
// protoactor's dead-letter throttle is let go: a message to an actor that
// just stopped (a Cancel crossing a finished sequence's stop) starts a
// goroutine that ends by itself after the throttle interval (1s).
func noLeaksSince(t *testing.T) {
	t.Helper()
	base := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		leaktest.Settled(t, gateWait, base, goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	})
}

// pollStats polls rt.Stats until ok accepts a snapshot, failing the test with
// the last one after gateWait. Each ask may take up to gateWait too: a loaded
// batcher answers late, and only a hang should end the test.
func pollStats(t testing.TB, rt *actors.Runtime, what string, ok func(*messages.Stats) bool) *messages.Stats {
	t.Helper()
	deadline := time.Now().Add(gateWait)
	for {
		st, err := rt.Stats(gateWait)
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats never showed %s: %+v", what, st)
		}
		time.Sleep(time.Millisecond)
	}
}

// streamOrFail submits req with ctx, failing the test on an error.
func streamOrFail(t testing.TB, rt *actors.Runtime, ctx context.Context, req *messages.GenerateRequest) <-chan *messages.OutputChunk {
	t.Helper()
	ch, err := rt.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// choicesAlone runs each request by itself, one after the other, on a fresh
// runtime (default configuration, 256 blocks), and returns each choice's token ids:
// what a request gives when nothing else is running.
func choicesAlone(t *testing.T, m *model.Model, reqs ...*messages.GenerateRequest) [][][]int32 {
	t.Helper()
	rt := start(t, m, actors.Config{NumBlocks: 256})
	out := make([][][]int32, len(reqs))
	for i, req := range reqs {
		r := run(t, rt, copyReq(req))
		for c, f := range r.finish {
			if f != messages.FinishLength && f != messages.FinishStop {
				t.Fatalf("request %d choice %d alone: finish %q %s", i, c, f, r.errs[c])
			}
		}
		out[i] = r.ids
	}
	return out
}

// streamTail reads a request's stream as it arrives, checking the stream's rules
// on each chunk: a choice finishes once and sends nothing after; the Done
// chunk comes last, once, and the channel is closed after it.
type streamTail struct {
	t      testing.TB
	ch     <-chan *messages.OutputChunk
	ids    [][]int32 // per choice
	finish []string
	errs   []string
	done   *messages.OutputChunk
	closed bool
}

func newStreamTail(t testing.TB, ch <-chan *messages.OutputChunk, n int) *streamTail {
	return &streamTail{t: t, ch: ch, ids: make([][]int32, n), finish: make([]string, n), errs: make([]string, n)}
}

func (w *streamTail) add(c *messages.OutputChunk, ok bool) {
	w.t.Helper()
	switch {
	case !ok:
		w.closed = true
		if w.done == nil {
			w.t.Error("stream closed without a Done chunk")
		}
		return
	case w.done != nil:
		w.t.Errorf("chunk after the Done chunk: %+v", c)
		return
	case c.Done:
		w.done = c
		return
	case c.Index < 0 || c.Index >= len(w.ids):
		w.t.Errorf("chunk for choice %d of %d", c.Index, len(w.ids))
		return
	case w.finish[c.Index] != "":
		w.t.Errorf("choice %d: chunk after its finish %q: %+v", c.Index, w.finish[c.Index], c)
	}
	for _, tok := range c.Tokens {
		w.ids[c.Index] = append(w.ids[c.Index], tok.ID)
	}
	if c.FinishReason != "" {
		w.finish[c.Index], w.errs[c.Index] = c.FinishReason, c.Err
	}
}

// poll reads what has arrived, without waiting.
func (w *streamTail) poll() {
	w.t.Helper()
	for !w.closed {
		select {
		case c, ok := <-w.ch:
			w.add(c, ok)
		default:
			return
		}
	}
}

// waitTokens reads until the stream holds n tokens, failing the test after
// gateWait.
func (w *streamTail) waitTokens(n int) {
	w.t.Helper()
	timer := time.NewTimer(gateWait)
	defer timer.Stop()
	for !w.closed && w.tokens() < n {
		select {
		case c, ok := <-w.ch:
			w.add(c, ok)
		case <-timer.C:
			w.t.Fatalf("%d tokens never came: so far %v finish %q", n, w.ids, w.finish)
		}
	}
	if w.tokens() < n {
		w.t.Fatalf("stream closed before %d tokens: %v finish %q", n, w.ids, w.finish)
	}
}

// wait reads until the stream is closed, failing the test after gateWait.
func (w *streamTail) wait() *streamTail {
	w.t.Helper()
	timer := time.NewTimer(gateWait)
	defer timer.Stop()
	for !w.closed {
		select {
		case c, ok := <-w.ch:
			w.add(c, ok)
		case <-timer.C:
			w.t.Fatalf("request hung: so far %v finish %q", w.ids, w.finish)
		}
	}
	return w
}

// tokens is the number of tokens of every choice so far.
func (w *streamTail) tokens() int {
	n := 0
	for _, ids := range w.ids {
		n += len(ids)
	}
	return n
}
