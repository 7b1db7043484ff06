package server_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/server"
)

// reply is one response of send: its status (0: the client gave up) and body.
type reply struct {
	code int
	body string
}

// send posts a completion for name in its own goroutine, under ctx; its
// reply comes on the channel.
func (f *managed) send(ctx context.Context, name string) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/v1/completions",
			strings.NewReader(`{"model":"`+name+`","prompt":"Once upon a time","max_tokens":4,"temperature":0}`))
		if err != nil {
			out <- reply{}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- reply{}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- reply{resp.StatusCode, string(b)}
	}()
	return out
}

// until spins until cond holds (no sleeps: each step yields).
func until(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

// queued spins until n requests wait in the queue; a reply on r first (a
// request answered, not queued) fails the test.
func (f *managed) queued(t *testing.T, n int, r <-chan reply) {
	t.Helper()
	for f.m.Queued() != n {
		select {
		case got := <-r:
			t.Fatalf("want %d queued; a request was answered instead: %d %s", n, got.code, got.body)
		default:
			runtime.Gosched()
		}
	}
}

// busyLoading starts a request for name whose load waits for the returned
// gate: name stays busy (held by the request) until the gate closes.
func (f *managed) busyLoading(name string) (chan struct{}, <-chan reply) {
	gate := f.gate(name)
	r := f.send(context.Background(), name)
	until(func() bool { return f.m.Busy(name) == 1 })
	return gate, r
}

// releaseThenLoad lets the request that holds busy (busyLoading) end, then
// asks for next, which must load in busy's place: the one model loaded.
func (f *managed) releaseThenLoad(t *testing.T, gate chan struct{}, held <-chan reply, busy, next string) {
	t.Helper()
	close(gate)
	if r := <-held; r.code != 200 {
		t.Errorf("%s: %d %s", busy, r.code, r.body)
	}
	if code, out := f.complete(t, next, ""); code != 200 {
		t.Errorf("%s once %s is idle: %d %s", next, busy, code, out)
	}
	if got := f.psNames(t); !slices.Equal(got, []string{next + ":latest"}) {
		t.Errorf("after %s: %v loaded", next, got)
	}
}

// queueManaged is the manager of small, tiny and third (stories260K by
// name) with a queue of n, at --max-loaded-models 1, or with every model
// loadable but a budget of 100 bytes that fits one of them.
func queueManaged(t *testing.T, n int, byBytes bool) *managed {
	return newManaged(t, func(c *server.ManagerConfig) {
		c.MaxQueue, c.MaxLoaded = n, 1
		c.Models = []server.ModelSource{{Name: "third", Path: testmodels.Path(t, "stories260K.gguf")}}
		if byBytes {
			c.MaxLoaded, c.MaxBytes, c.Size = 4, 100, fakeSizes(map[string]int64{"small": 60, "tiny": 50, "third": 70})
		}
	})
}

// TestManagerQueue: a request whose model cannot load while the model in
// its way is busy (at --max-loaded-models 1, or by --models-memory) waits
// in the queue, holding no model, and is served once that model is idle;
// two waiters are served in their order; a request for the loaded model
// queues behind them (so a stream for it cannot starve them); the gauge
// troupe:models_queue_waiting counts them.
func TestManagerQueue(t *testing.T) {
	for _, c := range []struct {
		name    string
		byBytes bool
	}{{"max loaded", false}, {"memory", true}} {
		t.Run(c.name, func(t *testing.T) {
			f := queueManaged(t, 8, c.byBytes)
			gate, small := f.busyLoading("small")
			tinyGate, thirdGate := f.gate("tiny"), f.gate("third")
			tiny := f.send(context.Background(), "tiny")
			f.queued(t, 1, tiny)
			third := f.send(context.Background(), "third")
			f.queued(t, 2, third)
			small2 := f.send(context.Background(), "small") // small is loaded (loading): it queues behind them
			until(func() bool { return f.m.Queued() == 3 || f.m.Busy("small") == 2 })
			if n := f.m.Busy("small"); n != 1 {
				t.Errorf("small is held by %d requests while 3 wait, want 1 (a queued request holds no model)", n)
			}
			if _, b := get(t, f.url+"/metrics"); !strings.Contains(string(b), "troupe:models_queue_waiting 3") {
				t.Errorf("/metrics lacks troupe:models_queue_waiting 3")
			}

			close(gate) // small's request ends: tiny, the first waiter, loads in its place
			if r := <-small; r.code != 200 {
				t.Errorf("small: %d %s", r.code, r.body)
			}
			until(func() bool { return f.m.Busy("tiny") == 1 || f.m.Busy("third") == 1 })
			if f.m.Busy("tiny") != 1 || f.m.Busy("third") != -1 || f.m.Busy("small") != -1 {
				t.Errorf("after small: tiny %d, third %d, small %d held; want tiny loading first, the others waiting",
					f.m.Busy("tiny"), f.m.Busy("third"), f.m.Busy("small"))
			}
			close(tinyGate)
			close(thirdGate)
			for name, ch := range map[string]<-chan reply{"tiny": tiny, "third": third, "small again": small2} {
				if r := <-ch; r.code != 200 {
					t.Errorf("%s: %d %s", name, r.code, r.body)
				}
			}
			if f.m.Queued() != 0 || f.loadCount("small") != 2 || f.loadCount("tiny") != 1 || f.loadCount("third") != 1 {
				t.Errorf("%d queued; loads: small %d, tiny %d, third %d; want 0 and 2, 1, 1",
					f.m.Queued(), f.loadCount("small"), f.loadCount("tiny"), f.loadCount("third"))
			}
			if _, b := get(t, f.url+"/metrics"); !strings.Contains(string(b), "troupe:models_queue_waiting 0") {
				t.Errorf("/metrics lacks troupe:models_queue_waiting 0")
			}
		})
	}
}

// TestManagerQueueLeaves: a waiter whose client goes away leaves the queue
// (and loads nothing); a request past --models-queue is a 503 with
// Retry-After naming the flag; Drain turns the waiters away with 503; a
// model alone over the budget is a 400, not queued.
func TestManagerQueueLeaves(t *testing.T) {
	f := queueManaged(t, 1, true)
	gate, small := f.busyLoading("small")
	ctx, cancel := context.WithCancel(context.Background())
	gone := f.send(ctx, "tiny")
	f.queued(t, 1, gone)
	resp, b := post(t, f.url+"/v1/completions", `{"model":"third","prompt":"x","max_tokens":1}`)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "--models-queue 1") {
		t.Errorf("third past a full queue: %d %s", resp.StatusCode, b)
	}
	cancel()
	if r := <-gone; r.code != 0 {
		t.Errorf("the canceled request: %d %s", r.code, r.body)
	}
	until(func() bool { return f.m.Queued() == 0 })
	if _, b := get(t, f.url+"/metrics"); !strings.Contains(string(b), "troupe:models_queue_waiting 0") {
		t.Errorf("/metrics lacks troupe:models_queue_waiting 0 after the waiter left")
	}

	close(gate)
	if r := <-small; r.code != 200 || f.loadCount("tiny") != 0 {
		t.Errorf("small: %d %s; tiny loaded %d times for a client gone", r.code, r.body, f.loadCount("tiny"))
	}

	f = newManaged(t, func(c *server.ManagerConfig) {
		c.MaxQueue, c.MaxBytes, c.Size = 4, 100, fakeSizes(map[string]int64{"small": 60, "tiny": 50, "huge": 200})
		linkStories(t, filepath.Join(c.Dir, "huge.gguf"))
	})
	gate, small = f.busyLoading("small")
	resp, b = post(t, f.url+"/v1/completions", `{"model":"huge","prompt":"x","max_tokens":1}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "model_too_large") || f.m.Queued() != 0 {
		t.Errorf("huge while small is busy: %d %s, %d queued", resp.StatusCode, b, f.m.Queued())
	}
	waiting := f.send(context.Background(), "tiny")
	f.queued(t, 1, waiting)
	f.m.Drain()
	if r := <-waiting; r.code != 503 || !strings.Contains(r.body, "shutting down") {
		t.Errorf("a waiter at Drain: %d %s", r.code, r.body)
	}
	if f.m.Queued() != 0 || f.loadCount("tiny") != 0 {
		t.Errorf("after Drain: %d queued, tiny loaded %d times", f.m.Queued(), f.loadCount("tiny"))
	}
	close(gate)
	<-small
}
