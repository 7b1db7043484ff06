package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/internal/promtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

var (
	soakFor     = flag.Duration("soak", 0, "run TestSoak for this long (make soak)")
	soakClients = flag.Int("soak-clients", 16, "TestSoak's concurrent clients")
)

// TestSoak runs the real server (the troupe binary on stories260K, with a KV
// pool too small for its running set, so sequences are preempted) under a
// mixed load for -soak: completions and chat, streaming and not, greedy and
// seeded sampling with n up to 3, short and long prompts, prompts sharing a
// long prefix, and clients that cancel (they go away mid-stream or
// mid-request). Then it checks that no request was lost or hung, that every
// finished request got the same choices as on the quiet server, that every
// KV block came back, and that goroutines and the heap (after a GC) are back
// at their level before the load. It prints these figures.
func TestSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("a soak runs with -soak DURATION (make soak; make test runs a short one)")
	}
	bin := buildTroupe(t)
	models := testmodels.Dir(t)
	const numBlocks = 48
	url, cmd, logs := serve(t, bin, nil, "-m", filepath.Join(models, "stories260K.gguf"),
		"--chat-template", filepath.Join(models, "templates", "HuggingFaceTB-SmolLM2-135M-Instruct.jinja"),
		"--max-num-seqs", "8", "--num-kv-blocks", strconv.Itoa(numBlocks), "-c", strconv.Itoa(numBlocks*16), // a pool of one context: serve refuses less
		"--max-queue", "512", "--pprof", "--write-stall-timeout", soakStallTimeout.String(),
		"--tool-call-parser", "hermes") // tool_choice "required" needs a tool-call format
	c := &soakClient{url: url, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}

	reqs := soakRequests()
	quiet := soakQuietRun(t, c, reqs)
	before := c.idleFigures(t)

	tally := newSoakTally()
	start := time.Now()
	end := start.Add(*soakFor)
	var wg sync.WaitGroup
	for w := range *soakClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			soakClientLoop(c, uint64(w), reqs, quiet, end, tally)
		}()
	}
	if *soakAttacks {
		runSoakAttacks(c, end, &wg, tally.attack)
	}
	wg.Wait()
	elapsed := time.Since(start)
	after := c.idleFigures(t)
	preemptions := c.metric(t, "troupe:num_preemptions_total")

	fmt.Fprint(os.Stdout, tally.report(elapsed, preemptions, before, after, numBlocks))
	tally.check(t, preemptions, before, after, numBlocks)
	_ = cmd.Process.Kill()
	if t.Failed() {
		t.Logf("server log (tail):\n%s", tail(logs.String(), 4000))
	}
}

// soakQuietRun runs each request alone, whole and streamed, and returns
// its choices: what every run under load must give again.
func soakQuietRun(t *testing.T, c *soakClient, reqs []soakRequest) []*choices {
	t.Helper()
	quiet := make([]*choices, len(reqs))
	for i, r := range reqs {
		got, err := c.do(context.Background(), r, false)
		if err != nil {
			t.Fatalf("quiet run of request %d (%s): %v", i, r.path, err)
		}
		streamed, err := c.do(context.Background(), r, true)
		if err != nil || !slices.Equal(streamed.text, got.text) {
			t.Fatalf("quiet run of request %d (%s): streamed %q, %v; whole %q", i, r.path, streamed.text, err, got.text)
		}
		quiet[i] = got
	}
	return quiet
}

// soakTally counts the soak's outcomes; safe for concurrent use.
type soakTally struct {
	mu sync.Mutex
	// every outcome is printed, the ones that must stay at zero too
	counts    map[string]int
	attacks   map[string]int // by attack and outcome
	latencies []time.Duration
	problems  []string
}

func newSoakTally() *soakTally {
	return &soakTally{counts: map[string]int{"served": 0, "cancelled by the client": 0, "failed": 0,
		"hung (no answer in a minute)": 0, "different from the quiet run": 0}, attacks: map[string]int{}}
}

// note counts one request's outcome, its latency (0: none) and a problem
// to report ("": none).
func (s *soakTally) note(outcome string, lat time.Duration, problem string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[outcome]++
	if lat > 0 {
		s.latencies = append(s.latencies, lat)
	}
	if problem != "" && len(s.problems) < 20 {
		s.problems = append(s.problems, problem)
	}
}

// attack counts one attack's outcome (ok: the one expected).
func (s *soakTally) attack(name, outcome string, ok bool) {
	if !ok {
		s.note("attack, unexpected outcome", 0, name+": "+outcome)
		outcome = "UNEXPECTED " + outcome
	}
	s.mu.Lock()
	s.attacks[name+": "+outcome]++
	s.mu.Unlock()
}

// soakClientLoop is one client of the load until end: random requests of
// the mix, streamed or not, some cancelled, each checked against the quiet
// run.
func soakClientLoop(c *soakClient, seed uint64, reqs []soakRequest, quiet []*choices, end time.Time, tally *soakTally) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for time.Now().Before(end) {
		i := rng.IntN(len(reqs))
		stream := rng.IntN(2) == 0
		var ctx context.Context
		var cancel context.CancelFunc
		cancelled := rng.IntN(8) == 0
		if cancelled { // the client goes away after 1 to 40 ms
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(1+rng.IntN(40))*time.Millisecond)
		} else { // a request that takes this long is hung
			ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		}
		t0 := time.Now()
		got, err := c.do(ctx, reqs[i], stream)
		lat := time.Since(t0)
		cancel()
		switch {
		case cancelled && err != nil && errors.Is(err, context.DeadlineExceeded):
			tally.note("cancelled by the client", 0, "")
		case err != nil && errors.Is(err, context.DeadlineExceeded):
			tally.note("hung (no answer in a minute)", 0, fmt.Sprintf("request %d (%s, stream %v): no answer in a minute", i, reqs[i].path, stream))
		case err != nil:
			tally.note("failed", 0, fmt.Sprintf("request %d (%s, stream %v): %v", i, reqs[i].path, stream, err))
		case !slices.Equal(got.text, quiet[i].text) || !slices.Equal(got.finish, quiet[i].finish):
			tally.note("different from the quiet run", lat, fmt.Sprintf("request %d (%s, stream %v): %q %q, quiet %q %q",
				i, reqs[i].path, stream, got.text, got.finish, quiet[i].text, quiet[i].finish))
		default:
			tally.note("served", lat, "")
		}
	}
}

// report is the soak's figures, printed whether it passes or not.
func (s *soakTally) report(elapsed time.Duration, preemptions float64, before, after figures, numBlocks int) string {
	slices.Sort(s.latencies)
	var p99, worst time.Duration
	if n := len(s.latencies); n > 0 {
		p99, worst = s.latencies[(n*99)/100], s.latencies[n-1]
	}
	total := 0
	for _, n := range s.counts {
		total += n
	}
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %v, %d clients, %d requests (%.1f/s), %v preemptions\n", elapsed.Round(time.Second), *soakClients, total, float64(total)/elapsed.Seconds(), preemptions)
	for _, k := range slices.Sorted(maps.Keys(s.counts)) {
		fmt.Fprintf(&b, "  %-32s %d\n", k, s.counts[k])
	}
	fmt.Fprintf(&b, "  latency of the served: p99 %v, max %v\n", p99.Round(time.Millisecond), worst.Round(time.Millisecond))
	fmt.Fprintf(&b, "  free KV blocks: %v before, %v after (of %d)\n", before.freeBlocks, after.freeBlocks, numBlocks)
	fmt.Fprintf(&b, "  goroutines:     %v before, %v after\n", before.goroutines, after.goroutines)
	fmt.Fprintf(&b, "  actors:         %v before, %v after\n", before.actors, after.actors)
	fmt.Fprintf(&b, "  heap after GC:  %.1f MiB before, %.1f MiB after\n", before.heap/(1<<20), after.heap/(1<<20))
	for _, k := range slices.Sorted(maps.Keys(s.attacks)) {
		fmt.Fprintf(&b, "  attack %-60s %d\n", k, s.attacks[k])
	}
	return b.String()
}

// check fails t for each problem noted and for what the load left behind.
func (s *soakTally) check(t *testing.T, preemptions float64, before, after figures, numBlocks int) {
	t.Helper()
	for _, p := range s.problems {
		t.Error(p)
	}
	if s.counts["served"] == 0 || s.counts["cancelled by the client"] == 0 || preemptions == 0 {
		t.Errorf("the load did not cover its mix: %v, %v preemptions", s.counts, preemptions)
	}
	if after.freeBlocks != float64(numBlocks) || before.freeBlocks != float64(numBlocks) {
		t.Errorf("KV blocks not all returned: %v free before, %v after, of %d", before.freeBlocks, after.freeBlocks, numBlocks)
	}
	if after.goroutines > before.goroutines+2 {
		t.Errorf("goroutines: %v before the load, %v after", before.goroutines, after.goroutines)
	}
	if after.actors != before.actors {
		t.Errorf("actors and futures registered: %v before the load, %v after", before.actors, after.actors)
	}
	// protoactor's process registry is 32768 Go maps, each allocated when
	// an actor id first hashes to it and never freed: up to about 10 MiB
	// that a long enough run allocates once (leaked actors themselves are
	// counted above). With the attacks the grammar cache also keeps their
	// 24 distinct grammars (8 variants of 3), a few MiB (7.5 MiB of growth
	// in all after a 25 s run): 1.5x the start plus 16 MiB covers both, and
	// a leak of what an attack holds (a compiled grammar, a stalled
	// stream's queued output, a tokenized 3 MB prompt) passes it within
	// minutes; a leak of a few bytes a request would not.
	heapBound := before.heap*1.25 + 12<<20
	if *soakAttacks {
		heapBound = before.heap*1.5 + 16<<20
	}
	fmt.Printf("  heap bound:     %.1f MiB\n", heapBound/(1<<20))
	if after.heap > heapBound {
		t.Errorf("heap after GC: %.1f MiB before the load, %.1f MiB after", before.heap/(1<<20), after.heap/(1<<20))
	}
}

// soakRequest is one request body of the mix.
type soakRequest struct {
	path string // /v1/completions or /v1/chat/completions
	body map[string]any
}

// soakRequests is the mix: every request is deterministic (greedy, or
// sampled with a seed), so it must give the same choices under any load.
func soakRequests() []soakRequest {
	story := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. "
	long := strings.Repeat(story, 12) // about 300 tokens, shared by several prompts
	prompts := []string{"Once upon a time", "The cat sat", "Tom and Sam went to the",
		long + "One day,", long + "Then Lily saw a big dog.", long + "The end."}
	var out []soakRequest
	for i, p := range prompts {
		out = append(out,
			soakRequest{"/v1/completions", map[string]any{"prompt": p, "max_tokens": 48, "temperature": 0}},
			soakRequest{"/v1/completions", map[string]any{"prompt": p, "max_tokens": 24, "temperature": 0.9, "n": 3, "seed": i, "ignore_eos": true}},
		)
	}
	for i, m := range []string{"Tell me a story.", "What did the dog do?", strings.Repeat("Lily and the dog played. ", 20) + "What next?"} {
		msgs := []map[string]string{{"role": "user", "content": m}}
		out = append(out,
			soakRequest{"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 40, "temperature": 0}},
			soakRequest{"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 20, "temperature": 0.8, "n": 2, "seed": 100 + i}},
		)
	}
	return out
}

type soakClient struct {
	url  string
	http *http.Client
}

// choices are a response's texts and finish reasons, by choice index.
type choices struct{ text, finish []string }

func (ch *choices) add(index int, text string, finish *string) error {
	if index < 0 || index > 64 {
		return fmt.Errorf("choice index %d", index)
	}
	for len(ch.text) <= index {
		ch.text, ch.finish = append(ch.text, ""), append(ch.finish, "")
	}
	ch.text[index] += text
	if finish != nil {
		ch.finish[index] = *finish
	}
	return nil
}

type choiceJSON struct {
	Index   int     `json:"index"`
	Text    string  `json:"text"`
	Finish  *string `json:"finish_reason"`
	Message *struct {
		Content string `json:"content"`
	} `json:"message"`
	Delta *struct {
		Content string `json:"content"`
	} `json:"delta"`
}

type responseJSON struct {
	Choices []choiceJSON `json:"choices"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// do sends r and returns its choices; every choice must have finished.
func (c *soakClient) do(ctx context.Context, r soakRequest, stream bool) (*choices, error) {
	body := map[string]any{"stream": stream}
	for k, v := range r.body {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+r.path, strings.NewReader(string(b)))
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, msg)
	}
	got := &choices{}
	addAll := func(res *responseJSON) error {
		if res.Error != nil {
			return fmt.Errorf("error: %s", res.Error.Message)
		}
		for _, ch := range res.Choices {
			text := ch.Text
			if ch.Message != nil {
				text = ch.Message.Content
			} else if ch.Delta != nil {
				text = ch.Delta.Content
			}
			if err := got.add(ch.Index, text, ch.Finish); err != nil {
				return err
			}
		}
		return nil
	}
	if !stream {
		var res responseJSON
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
			return nil, err
		}
		if err := addAll(&res); err != nil {
			return nil, err
		}
	} else {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		done := false
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				done = true
				break
			}
			var res responseJSON
			if err := json.Unmarshal([]byte(data), &res); err != nil {
				return nil, fmt.Errorf("event %q: %v", data, err)
			}
			if err := addAll(&res); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
		if !done {
			return nil, fmt.Errorf("the stream ended without [DONE]")
		}
	}
	for i, f := range got.finish {
		if f == "" {
			return nil, fmt.Errorf("choice %d has no finish reason", i)
		}
	}
	return got, nil
}

// figures are what the soak compares before and after the load.
type figures struct{ freeBlocks, goroutines, actors, heap float64 }

// idleFigures waits until the server is idle (no sequence, no block held,
// goroutines settled after the client's connections are closed) and reads
// its figures, the heap after a forced GC.
func (c *soakClient) idleFigures(t *testing.T) figures {
	t.Helper()
	c.http.CloseIdleConnections()
	deadline := time.Now().Add(60 * time.Second)
	var f figures
	last := -1.0
	for {
		// A heap profile with gc=1 runs a GC first.
		resp, err := c.http.Get(c.url + "/debug/pprof/heap?gc=1")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.http.CloseIdleConnections()
		busy := c.metric(t, "troupe:num_requests_running") + c.metric(t, "troupe:num_requests_waiting") + c.metric(t, "troupe:kv_cache_usage_perc")
		f = figures{freeBlocks: c.metric(t, "troupe:kv_cache_free_blocks"), goroutines: c.metric(t, "go_goroutines"),
			actors: c.metric(t, "troupe:actor_processes"), heap: c.metric(t, "go_memstats_heap_alloc_bytes")}
		c.http.CloseIdleConnections()
		// Settled: idle, and the goroutine count the same twice running
		// (connections and the actor system's timers wind down).
		if busy == 0 && f.goroutines == last {
			return f
		}
		last = f.goroutines
		if time.Now().After(deadline) {
			return f
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// metric reads one sample of /metrics.
func (c *soakClient) metric(t *testing.T, name string) float64 {
	t.Helper()
	v, err := promtest.Sample(c.http, c.url, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func tail(s string, n int) string { return s[max(len(s)-n, 0):] }
