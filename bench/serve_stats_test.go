package bench

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	for _, tc := range []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"one value", []float64{7}, 99, 7},
		{"median of even count", []float64{1, 2, 3, 4}, 50, 2.5},
		{"median of odd count", []float64{1, 2, 10}, 50, 2},
		{"p99 of four", []float64{10, 20, 30, 40}, 99, 39.7}, // rank 2.97: 30 + 0.97*10
		{"p99 of 1..100", hundred, 99, 99.01},
		{"p0", hundred, 0, 1},
		{"p100", hundred, 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

func TestLatencyStats(t *testing.T) {
	s := latencyStats([]time.Duration{40 * ms, 10 * ms, 30 * ms, 20 * ms}) // unsorted on purpose
	want := LatencyStats{N: 4, Mean: 25, Std: math.Sqrt(125), Median: 25, P99: 39.7}
	if s.N != want.N || math.Abs(s.Mean-want.Mean) > 1e-9 || math.Abs(s.Std-want.Std) > 1e-9 ||
		math.Abs(s.Median-want.Median) > 1e-9 || math.Abs(s.P99-want.P99) > 1e-9 {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if s := latencyStats(nil); s != (LatencyStats{}) {
		t.Errorf("no samples: %+v, want zeros", s)
	}
}

func TestTPOT(t *testing.T) {
	for _, tc := range []struct {
		ttft, e2el time.Duration
		tokens     int
		want       time.Duration
	}{
		{10 * ms, 100 * ms, 10, 10 * ms}, // 90 ms over the 9 tokens after the first
		{10 * ms, 100 * ms, 2, 90 * ms},
		{10 * ms, 100 * ms, 1, 0}, // no token after the first
		{0, 0, 0, 0},
	} {
		r := RequestResult{TTFT: tc.ttft, Latency: tc.e2el, OutputTokens: tc.tokens}
		if got := r.TPOT(); got != tc.want {
			t.Errorf("TTFT %v E2EL %v %d tokens: TPOT %v, want %v", tc.ttft, tc.e2el, tc.tokens, got, tc.want)
		}
	}
}

// TestSummarize: a run of synthetic timings adds up to the report vLLM
// would print for it.
func TestSummarize(t *testing.T) {
	ok := func(ttft, e2el time.Duration, tokens int, itl ...time.Duration) RequestResult {
		return RequestResult{Sent: true, PromptTokens: 100, OutputTokens: tokens, Usage: true, MaxTokens: 10,
			Chunks: len(itl) + 1, TTFT: ttft, Latency: e2el, ITL: itl}
	}
	results := []RequestResult{
		ok(10*ms, 100*ms, 10, 10*ms, 10*ms, 10*ms), // TPOT 10 ms
		ok(20*ms, 200*ms, 10, 20*ms, 40*ms),        // TPOT 20 ms
		{Sent: true, Err: errors.New("HTTP 503: overloaded")},
		ok(30*ms, 30*ms, 1), // one token: no TPOT, no ITL; short of max_tokens
		{Sent: true, Err: errors.New("stream broken")},
		{Sent: true, Err: errors.New("context canceled"), Cancelled: true},
		{}, // never sent
	}
	results[3].Usage = false
	r := summarize(results, 2*time.Second, []SLO{{"ttft", 25 * ms}, {"tpot", 15 * ms}})

	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"completed", float64(r.Completed), 3},
		{"failed", float64(r.Failed), 2},
		{"unfinished", float64(r.Unfinished), 2},
		{"input tokens", float64(r.TotalInputTokens), 300},
		{"output tokens", float64(r.TotalOutputTokens), 21},
		{"request throughput", r.RequestThroughput, 1.5},
		{"output throughput", r.OutputThroughput, 10.5},
		{"total token throughput", r.TotalTokenThroughput, 160.5},
		// Only request 0 meets both: 1 has a TPOT of 20 ms, 3 a TTFT of 30 ms.
		{"good requests", float64(r.GoodRequests), 1},
		{"goodput", r.RequestGoodput, 0.5},
		{"no usage", float64(r.NoUsage), 1},
		{"short outputs", float64(r.ShortOutputs), 1},
		{"TTFT n", float64(r.TTFT.N), 3},
		{"TTFT mean", r.TTFT.Mean, 20},
		{"TTFT median", r.TTFT.Median, 20},
		{"TTFT p99", r.TTFT.P99, 29.8},
		{"TPOT n", float64(r.TPOT.N), 2}, // the one-token request has none
		{"TPOT mean", r.TPOT.Mean, 15},
		{"TPOT p99", r.TPOT.P99, 19.9},
		{"ITL n", float64(r.ITL.N), 5}, // flattened over requests
		{"ITL mean", r.ITL.Mean, 18},
		{"ITL median", r.ITL.Median, 10},
		{"E2EL mean", r.E2EL.Mean, 110},
		{"E2EL median", r.E2EL.Median, 100},
		{"E2EL p99", r.E2EL.P99, 198},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !r.Interrupted {
		t.Error("a run with unfinished requests is not marked interrupted")
	}
	if r.FirstError != "request 2: HTTP 503: overloaded" {
		t.Errorf("first error %q", r.FirstError)
	}

	// A goodput of one objective counts the requests meeting it alone.
	if r := summarize(results, time.Second, []SLO{{"e2el", 100 * ms}}); r.GoodRequests != 2 {
		t.Errorf("e2el <= 100 ms: %d good requests, want 2", r.GoodRequests)
	}
	if r := summarize(results, time.Second, nil); r.GoodRequests != 0 || r.RequestGoodput != 0 {
		t.Errorf("no objectives: %d good requests", r.GoodRequests)
	}
}

func TestParseGoodput(t *testing.T) {
	got, err := ParseGoodput("ttft:300, tpot:12.5,E2EL:2000")
	want := []SLO{{"ttft", 300 * ms}, {"tpot", 12500 * time.Microsecond}, {"e2el", 2 * time.Second}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("objective %d: %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "ttft", "ttft:", "ttft:0", "ttft:-5", "ttft:x", "itl:50", "ttft:1,ttft:2", "ttft:inf"} {
		if _, err := ParseGoodput(bad); err == nil {
			t.Errorf("ParseGoodput(%q): no error", bad)
		}
	}
}

func TestSampleLen(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		n      int
		r      float64
		lo, hi int
	}{{64, 0, 64, 64}, {64, 0.5, 32, 96}, {10, 0.25, 7, 13}, {4, 1, 1, 8}, {1, 0.9, 1, 2}} {
		seen := map[int]bool{}
		for range 2000 {
			v := sampleLen(rng, tc.n, tc.r)
			if v < tc.lo || v > tc.hi {
				t.Fatalf("sampleLen(%d, %v) = %d, outside [%d, %d]", tc.n, tc.r, v, tc.lo, tc.hi)
			}
			seen[v] = true
		}
		if !seen[tc.lo] || !seen[tc.hi] {
			t.Errorf("sampleLen(%d, %v): 2000 draws never reached both %d and %d", tc.n, tc.r, tc.lo, tc.hi)
		}
	}
}

// TestRequests: random prompts have their length in words and depend only
// on the seed; a dataset is sent in order and cycled.
func TestRequests(t *testing.T) {
	o := ServeOptions{NumPrompts: 5, InputLen: 12, OutputLen: 8, RangeRatio: 0.5, Seed: 3}
	a, b := o.requests(), o.requests()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d differs between runs of the same seed", i)
		}
		if n := len(strings.Fields(a[i].prompt)); n != a[i].inputLen || n < 6 || n > 18 {
			t.Errorf("request %d: %d words, input length %d", i, n, a[i].inputLen)
		}
		if a[i].outputLen < 4 || a[i].outputLen > 12 {
			t.Errorf("request %d: output length %d outside [4, 12]", i, a[i].outputLen)
		}
	}
	if o.Seed = 4; o.requests()[0].prompt == a[0].prompt {
		t.Error("another seed gives the same prompt")
	}
	o.Prompts = []string{"one two", "three"}
	for i, r := range o.requests() {
		if want := o.Prompts[i%2]; r.prompt != want || r.inputLen != len(strings.Fields(want)) {
			t.Errorf("request %d: %q (%d words), want %q", i, r.prompt, r.inputLen, want)
		}
	}
}

func TestReadPrompts(t *testing.T) {
	got, err := ReadPrompts(strings.NewReader("Once upon a time\r\n\n  \nThe end\n"))
	if err != nil || len(got) != 2 || got[0] != "Once upon a time" || got[1] != "The end" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := ReadPrompts(strings.NewReader("\n\n")); err == nil {
		t.Error("a dataset of blank lines: no error")
	}
}
