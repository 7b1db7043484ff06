package actors_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/internal/actortest"
	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// timeout bounds each ask of the runtime (Stats, Stop, KV transfers): only a
// hang should reach it, so it is as long as gateWait.
const timeout = gateWait

// newSystem returns an actor system that logs nothing, shut down with the
// test.
func newSystem(t testing.TB) *actor.ActorSystem {
	t.Helper()
	sys := actortest.QuietSystem()
	t.Cleanup(sys.Shutdown)
	return sys
}

// openModel opens a shared model (a path relative to the models directory).
func openModel(t testing.TB, rel string) *model.Model {
	t.Helper()
	return reftest.Open(t, testmodels.Path(t, rel))
}

// start starts a runtime; at cleanup it stops it and checks that every block
// is free (or cached) and that no goroutine leaked.
func start(t *testing.T, m *model.Model, cfg actors.Config) *actors.Runtime {
	t.Helper()
	sys := newSystem(t)
	if cfg.Backends == nil && cfg.NewBackend == nil {
		cfg.NewBackend = backend.For(m, backend.DeviceCPU)
	}
	rt, err := actors.Start(sys, m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stats(t, rt) // the batcher has started its devices
	base := actortest.NumActors(sys)
	t.Cleanup(func() {
		checkIdle(t, rt)
		// A leaked actor holds no goroutine while its mailbox is empty, so
		// only the registry shows it.
		n := actortest.NumActors(sys)
		for deadline := time.Now().Add(gateWait); n > base && time.Now().Before(deadline); n = actortest.NumActors(sys) {
			time.Sleep(5 * time.Millisecond)
		}
		if n > base { // fewer: a device its supervisor gave up on
			var ids []string
			for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
				ids = append(ids, m.Keys()...)
			}
			t.Errorf("%d actors registered after the test, %d when the runtime started: %v", n, base, ids)
		}
		if err := rt.Stop(timeout); err != nil {
			t.Error(err)
		}
	})
	return rt
}

// checkIdle asserts the runtime holds no sequence and no block.
func checkIdle(t *testing.T, rt *actors.Runtime) {
	t.Helper()
	var st *messages.Stats
	for deadline := time.Now().Add(gateWait); time.Now().Before(deadline); { // a cancelled request's last Cancel may still be on its way
		var err error
		if st, err = rt.Stats(gateWait); err != nil {
			t.Fatal(err)
		}
		if st.Running+st.Waiting+st.Swapped == 0 && st.NumFreeBlocks == st.NumBlocks && st.FreeHostBlocks == st.HostBlocks {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("runtime not idle after the test: %+v", st)
}

// stats is rt's Stats, failing the test on an error.
func stats(t testing.TB, rt *actors.Runtime) *messages.Stats {
	t.Helper()
	st, err := rt.Stats(timeout)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// noLeaks checks, at the end of the test, that no goroutine outlived it.
func noLeaks(t *testing.T) { noLeaksSince(t) }

// result is what one request produced.
type result struct {
	ids       [][]int32 // per choice
	text      []string
	finish    []string
	errs      []string
	preempted []int // per choice, from its last chunk
	usage     *messages.Usage
	chunks    int
}

// collect drains a request's stream.
func collect(t testing.TB, ch <-chan *messages.OutputChunk, n int) *result {
	t.Helper()
	r := &result{ids: make([][]int32, n), text: make([]string, n), finish: make([]string, n), errs: make([]string, n), preempted: make([]int, n)}
	timeout := time.After(2 * gateWait) // a whole request, on a loaded machine
	for {
		select {
		case c, ok := <-ch:
			if !ok {
				if r.usage == nil {
					t.Fatal("stream closed without a Done chunk")
				}
				return r
			}
			r.chunks++
			if c.Done {
				r.usage = c.Usage
				continue
			}
			for _, tok := range c.Tokens {
				r.ids[c.Index] = append(r.ids[c.Index], tok.ID)
			}
			r.text[c.Index] += c.Text
			if c.FinishReason != "" {
				if r.finish[c.Index] != "" {
					t.Errorf("choice %d finished twice: %s then %s", c.Index, r.finish[c.Index], c.FinishReason)
				}
				r.finish[c.Index], r.errs[c.Index], r.preempted[c.Index] = c.FinishReason, c.Err, c.Preemptions
			}
		case <-timeout:
			t.Fatal("request hung")
		}
	}
}

// greedy is a greedy request for prompt.
func greedy(prompt []int32, maxTokens int) *messages.GenerateRequest {
	return &messages.GenerateRequest{Prompt: slices.Clone(prompt), MaxTokens: maxTokens}
}

// run submits req and waits for its result.
func run(t testing.TB, rt *actors.Runtime, req *messages.GenerateRequest) *result {
	t.Helper()
	ch, err := rt.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return collect(t, ch, max(req.N, 1))
}

// refCase is one ../shared/reference/<model>/caseN.json.
type refCase = testmodels.Case

func loadCases(t testing.TB, name string) []*refCase { return testmodels.Cases(t, name) }

// stories opens stories260K and loads its reference cases.
func stories(t testing.TB) (*model.Model, []*refCase) {
	t.Helper()
	return openModel(t, "stories260K.gguf"), loadCases(t, "stories260K")
}

func TestSmoke(t *testing.T) {
	noLeaks(t)
	m, cases := stories(t)
	rt := start(t, m, actors.Config{})
	r := run(t, rt, greedy(cases[0].PromptIDs, 48))
	if !slices.Equal(r.ids[0], cases[0].GreedyIDs) {
		t.Fatalf("got %v\nwant %v\n%q %s %+v", r.ids[0], cases[0].GreedyIDs, r.text[0], r.finish[0]+" "+r.errs[0], r.usage)
	}
	t.Logf("text %q finish %s usage %+v chunks %d", r.text[0], r.finish[0], r.usage, r.chunks)
}
