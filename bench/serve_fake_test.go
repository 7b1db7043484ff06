package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/troupe-llm/troupe/bench"
	"github.com/troupe-llm/troupe/internal/leaktest"
)

// fakeServer is an OpenAI-compatible server whose n-th completion request
// (counted as they arrive, from 0) is answered by handle. It checks every
// request is what Serve promises to send.
type fakeServer struct {
	t       *testing.T
	url     string
	close   func() // before goleak looks for the server's goroutines
	handle  func(n int, w http.ResponseWriter, r *http.Request)
	arrived atomic.Int32
}

func newFakeServer(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) *fakeServer {
	f := &fakeServer{t: t, handle: handle}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`)
	})
	mux.HandleFunc("POST /v1/completions", f.completions)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	f.url, f.close = ts.URL, ts.Close
	return f
}

func (f *fakeServer) completions(w http.ResponseWriter, r *http.Request) {
	n := int(f.arrived.Add(1) - 1)
	var body struct {
		Model         string          `json:"model"`
		Prompt        string          `json:"prompt"`
		MaxTokens     int             `json:"max_tokens"`
		Temperature   *float64        `json:"temperature"`
		Stream        bool            `json:"stream"`
		StreamOptions map[string]bool `json:"stream_options"`
		IgnoreEOS     bool            `json:"ignore_eos"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("request %d: %v", n, err)
	}
	if body.Model != "fake-model" || body.Prompt == "" || body.MaxTokens < 1 || body.Temperature == nil || *body.Temperature != 0 ||
		!body.Stream || !body.StreamOptions["include_usage"] || !body.IgnoreEOS || r.Header.Get("Authorization") != "Bearer k" {
		f.t.Errorf("request %d: %+v, Authorization %q", n, body, r.Header.Get("Authorization"))
	}
	f.handle(n, w, r)
}

// stream writes SSE events, flushing each.
func stream(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

const (
	chunk = `{"object":"text_completion","choices":[{"index":0,"text":" the"}]}`
	usage = `{"object":"text_completion","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`
)

func serveOptions(url string) bench.ServeOptions {
	return bench.ServeOptions{URL: url, APIKey: "k", NumPrompts: 20, MaxConcurrency: 4, InputLen: 8, OutputLen: 4, IgnoreEOS: true}
}

// verifyNoLeaks fails the test if a goroutine not ignored by opts still
// runs two minutes on; deferred with goleak.IgnoreCurrent() first, its
// baseline is the goroutines running when the test began.
func verifyNoLeaks(t *testing.T, opts ...goleak.Option) { leaktest.Settled(t, 2*time.Minute, opts...) }

// TestServeFailures: HTTP errors, error events and streams cut short or
// broken are counted as failures, apart from the successes, and the first
// is reported.
func TestServeFailures(t *testing.T) {
	defer verifyNoLeaks(t, goleak.IgnoreCurrent())
	f := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n % 5 {
		case 0: // a good stream
			stream(w, chunk, chunk, chunk, chunk, usage, "[DONE]")
		case 1:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error","code":503}}`)
		case 2: // the handler returns: a clean end without [DONE]
			stream(w, chunk, chunk)
		case 3: // the connection drops mid-stream
			stream(w, chunk)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
		case 4:
			stream(w, chunk, `{"error":{"message":"the device failed","type":"server_error"}}`, "[DONE]")
		}
	})
	defer f.close()
	r, err := bench.Serve(context.Background(), serveOptions(f.url))
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 4 || r.Failed != 16 || r.Unfinished != 0 || r.Interrupted {
		t.Fatalf("%d completed, %d failed, %d unfinished; want 4, 16, 0", r.Completed, r.Failed, r.Unfinished)
	}
	if r.TotalOutputTokens != 16 || r.TotalInputTokens != 36 || r.E2EL.N != 4 || r.TTFT.N != 4 {
		t.Errorf("tokens %d in, %d out, %d latencies, %d TTFTs: the failures leaked into the statistics",
			r.TotalInputTokens, r.TotalOutputTokens, r.E2EL.N, r.TTFT.N)
	}
	if r.Model != "fake-model" {
		t.Errorf("model %q, want the one /v1/models lists", r.Model)
	}
	if r.FirstError == "" {
		t.Error("no first error")
	}
	kinds := map[string]int{}
	for _, res := range r.Requests {
		if res.Err == nil {
			continue
		}
		for _, k := range []string{"HTTP 503 Service Unavailable: overloaded", "stream ended without [DONE] after 2 content chunks",
			"stream broken after 1 content chunks", "error event: the device failed"} {
			if strings.Contains(res.Err.Error(), k) {
				kinds[k]++
			}
		}
	}
	if len(kinds) != 4 {
		t.Errorf("failures by kind: %v; want 4 of each", kinds)
	}
	for k, n := range kinds {
		if n != 4 {
			t.Errorf("%d failures %q, want 4", n, k)
		}
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Successful requests:                     4\n", "Failed requests:                         16\n",
		"16 of 20 requests failed; the first: request "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestServeTimings: the times measured hold the server's pauses, the
// concurrency limit holds, and goodput counts the requests within the
// objectives. The server waits 30 ms before the first chunk and 10 ms
// before each of the 3 others, and sends no usage chunk.
func TestServeTimings(t *testing.T) {
	defer verifyNoLeaks(t, goleak.IgnoreCurrent())
	var inFlight, peak atomic.Int32
	f := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		in := inFlight.Add(1)
		for p := peak.Load(); in > p && !peak.CompareAndSwap(p, in); p = peak.Load() {
		}
		time.Sleep(30 * time.Millisecond)
		stream(w, chunk)
		for range 3 {
			time.Sleep(10 * time.Millisecond)
			stream(w, chunk)
		}
		inFlight.Add(-1) // before [DONE]: the client may send its next request as soon as it reads it
		stream(w, "[DONE]")
	})
	defer f.close()
	o := serveOptions(f.url)
	o.NumPrompts, o.MaxConcurrency, o.Model = 12, 3, "fake-model"
	o.Goodput = []bench.SLO{{Metric: "ttft", Limit: 10 * time.Second}, {Metric: "e2el", Limit: 10 * time.Second}}
	r, err := bench.Serve(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 12 || r.NoUsage != 12 || r.TotalOutputTokens != 48 || r.TotalInputTokens != 12*8 {
		t.Fatalf("%d completed, %d without usage, %d tokens out, %d in; want 12, 12, 48 (counted chunks), 96 (words)",
			r.Completed, r.NoUsage, r.TotalOutputTokens, r.TotalInputTokens)
	}
	if p := peak.Load(); p > 3 {
		t.Errorf("%d requests in flight at once, over the limit of 3", p)
	}
	// A chunk may be read late but never early: the bounds are on the
	// times since the request was sent, not on each gap.
	for i, res := range r.Requests {
		last := res.TTFT
		for _, d := range res.ITL {
			last += d
		}
		if res.TTFT < 30*time.Millisecond || len(res.ITL) != 3 || last < 60*time.Millisecond || res.Latency < last ||
			res.TPOT() != (res.Latency-res.TTFT)/3 {
			t.Errorf("request %d: TTFT %v, ITL %v, E2EL %v, TPOT %v", i, res.TTFT, res.ITL, res.Latency, res.TPOT())
		}
	}
	if r.GoodRequests != 12 || r.RequestGoodput <= 0 {
		t.Errorf("%d good requests (%v/s) within 10 s objectives, want 12", r.GoodRequests, r.RequestGoodput)
	}
	if r.TTFT.N != 12 || r.TPOT.N != 12 || r.ITL.N != 36 || r.E2EL.N != 12 || r.TTFT.Median < 30 || r.E2EL.Median < 60 {
		t.Errorf("TTFT %+v\nTPOT %+v\nITL %+v\nE2EL %+v", r.TTFT, r.TPOT, r.ITL, r.E2EL)
	}
	o.Goodput = []bench.SLO{{Metric: "ttft", Limit: 10 * time.Second}, {Metric: "e2el", Limit: 50 * time.Millisecond}}
	if r, err = bench.Serve(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if r.GoodRequests != 0 {
		t.Errorf("e2el <= 50 ms: %d good requests, want 0", r.GoodRequests)
	}
}

// TestServeInterrupted: when the context ends, Serve cancels the requests
// in flight, sends no more, and reports those that finished.
func TestServeInterrupted(t *testing.T) {
	defer verifyNoLeaks(t, goleak.IgnoreCurrent())
	var blocked sync.WaitGroup
	blocked.Add(4)
	f := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 4 {
			stream(w, chunk, chunk, chunk, chunk, usage, "[DONE]")
			return
		}
		stream(w, chunk)
		if n < 8 {
			blocked.Done()
		}
		<-r.Context().Done() // hangs until the client goes away
	})
	defer f.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		blocked.Wait() // 4 finished, 4 in flight
		cancel()
	}()
	o := serveOptions(f.url)
	o.MaxConcurrency = 4
	r, err := bench.Serve(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 4 || r.Failed != 0 || r.Unfinished != 16 || !r.Interrupted || f.arrived.Load() != 8 {
		t.Errorf("%d completed, %d failed, %d unfinished, interrupted %t, %d sent; want 4, 0, 16, true, 8",
			r.Completed, r.Failed, r.Unfinished, r.Interrupted, f.arrived.Load())
	}
	var text strings.Builder
	r.WriteText(&text)
	if !strings.Contains(text.String(), "interrupted: 16 of 20 requests did not finish") {
		t.Errorf("report:\n%s", text.String())
	}
}
