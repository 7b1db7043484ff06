package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
)

// streamCompletion posts a streaming completion and returns its text, the
// time to its first content, and whether it ended with [DONE].
func streamCompletion(ctx context.Context, url, body string) (text string, ttft time.Duration, done bool, err error) {
	return streamCompletionHook(ctx, url, body, nil)
}

// streamCompletionHook is streamCompletion calling onChunk (if not nil)
// after each chunk that carries text.
func streamCompletionHook(ctx context.Context, url, body string, onChunk func()) (text string, ttft time.Duration, done bool, err error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return "", 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", 0, false, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	var b strings.Builder
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			return b.String(), ttft, true, nil
		}
		var ch struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			return "", 0, false, err
		}
		for _, c := range ch.Choices {
			if c.Text != "" && ttft == 0 {
				ttft = time.Since(start)
			}
			b.WriteString(c.Text)
			if c.Text != "" && onChunk != nil {
				onChunk()
			}
		}
	}
	return b.String(), ttft, false, sc.Err()
}

// TestDisconnect: clients that go away mid-prefill (after 2 ms, before any
// text) and mid-stream (after the third chunk of text) leave no sequence and
// no block behind, as /metrics shows.
func TestDisconnect(t *testing.T) {
	f := newFixture(t, options{rt: actors.Config{MaxNumBatchedTokens: 8}})
	long := strings.Repeat("Once upon a time there was a little girl. ", 8)
	for _, tc := range []struct {
		name   string
		after  time.Duration
		chunks int // cancel after this many chunks of text (0: on the timeout)
	}{{"mid-prefill", 2 * time.Millisecond, 0}, {"mid-stream", time.Minute, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.after)
			defer cancel()
			body := fmt.Sprintf(`{"prompt": %q, "max_tokens": 200, "ignore_eos": true, "stream": true}`, long)
			seen := 0
			_, _, done, _ := streamCompletionHook(ctx, f.url, body, func() {
				if seen++; seen == tc.chunks {
					cancel()
				}
			})
			if done {
				t.Fatal("the stream finished before the client went away; the test proves nothing")
			}
			f.waitIdle(t)
		})
	}
	// The server still serves.
	if _, _, done, err := streamCompletion(context.Background(), f.url, `{"prompt": "Once", "max_tokens": 4, "stream": true}`); !done || err != nil {
		t.Fatalf("after disconnects: done %v, %v", done, err)
	}
}

// TestConcurrentStreams: 64 streaming clients at once all complete with the
// text each gets alone. It logs throughput and time-to-first-token
// percentiles.
func TestConcurrentStreams(t *testing.T) {
	f := newFixture(t, options{})
	cases := loadCases(t)
	const clients, maxTokens = 64, 32
	body := func(i int) string {
		rc := cases[i%len(cases)]
		prompt := rc.Prompt + f.text(rc.GreedyIDs[:i%17])
		return fmt.Sprintf(`{"prompt": %q, "max_tokens": %d, "temperature": 0, "stream": true}`, prompt, maxTokens)
	}
	want := make([]string, clients)
	for i := range clients {
		text, _, done, err := streamCompletion(context.Background(), f.url, body(i))
		if err != nil || !done {
			t.Fatalf("alone %d: %v", i, err)
		}
		want[i] = text
	}
	got := make([]string, clients)
	ttfts := make([]time.Duration, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			text, ttft, done, err := streamCompletion(context.Background(), f.url, body(i))
			if err != nil || !done {
				t.Errorf("client %d: done %v, %v", i, done, err)
			}
			got[i], ttfts[i] = text, ttft
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i := range clients {
		if got[i] != want[i] {
			t.Errorf("client %d: %q, alone %q", i, got[i], want[i])
		}
	}
	slices.Sort(ttfts)
	gen := f.metric(t, "troupe:generation_tokens_total")
	if n := f.metric(t, "troupe:request_queue_time_seconds_count"); n != 2*clients {
		t.Errorf("queue time observed %v times; want %d (one per choice)", n, 2*clients)
	}
	if n := f.metric(t, "troupe:time_to_first_token_seconds_count"); n != 2*clients {
		t.Errorf("TTFT observed %v times; want %d", n, 2*clients)
	}
	t.Logf("%d clients × %d tokens in %v: %.0f generated tok/s overall; TTFT p50 %v p90 %v p99 %v max %v (%.0f tokens generated in all runs)",
		clients, maxTokens, elapsed.Round(time.Millisecond), float64(clients*maxTokens)/elapsed.Seconds(),
		ttfts[clients/2], ttfts[clients*9/10], ttfts[clients*99/100], ttfts[clients-1], gen)
	f.waitIdle(t)
}
