package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/server"
)

// liveStream is an open GET /v1/live.
type liveStream struct {
	resp   *http.Response
	events chan map[string]any // closed when the stream ends
}

func openLive(t *testing.T, url string, header ...string) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/live", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ls := &liveStream{resp: resp, events: make(chan map[string]any, 64)}
	go func() {
		defer close(ls.events)
		sc := bufio.NewScanner(resp.Body)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var ev map[string]any
				if name != "stats" || json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev) != nil {
					ev = map[string]any{"bad event": name + " " + line}
				}
				ls.events <- ev
			}
		}
	}()
	return ls
}

// next returns the next event that has the runtime's figures, failing the
// test after 2 minutes (it bounds a hang only) or at the end of the
// stream. An event whose read of the runtime timed out (a loaded machine:
// an error and no devices) is skipped.
func (ls *liveStream) next(t *testing.T) map[string]any {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-ls.events:
			if !ok {
				t.Fatal("the live stream ended")
			}
			if bad, ok := ev["bad event"]; ok {
				t.Fatalf("bad event: %v", bad)
			}
			if devs, _ := ev["devices"].([]any); len(devs) == 0 && ev["error"] != nil {
				continue
			}
			return ev
		case <-timeout:
			t.Fatal("no live event in 2 minutes")
		}
	}
}

func device0(ev map[string]any) map[string]any {
	return ev["devices"].([]any)[0].(map[string]any)
}

// TestLive: GET /v1/live needs the key, sends an event per interval with
// the device's figures, shows a request's tokens and steps, outlives the
// server's ReadTimeout, and ends when the server drains.
func TestLive(t *testing.T) {
	f := newFixture(t, options{rt: actors.Config{NumBlocks: 64, BlockSize: 16},
		srv: server.Config{APIKey: "k", ReadTimeout: 300 * time.Millisecond}, wrap: slow(time.Millisecond)})
	if resp := openLive(t, f.url).resp; resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the key: %d", resp.StatusCode)
	}
	ls := openLive(t, f.url, "Authorization", "Bearer k")
	opened := time.Now()
	if ls.resp.StatusCode != http.StatusOK || ls.resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", ls.resp.StatusCode, ls.resp.Header.Get("Content-Type"))
	}
	first := ls.next(t)
	d := device0(first)
	if d["blocks_free"].(float64) != 64 || d["running"].(float64) != 0 || d["steps"].(float64) != 0 || first["ttft_ms"] != nil {
		t.Fatalf("idle event: %v", first)
	}
	resp, b := post(t, f.url+"/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 20, "ignore_eos": true}`, "Authorization", "Bearer k")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	// The events after the request show its 20 tokens, its steps and
	// latencies; the stream lives past the 300ms ReadTimeout.
	var sawTTFT, sawITL bool
	var last map[string]any
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); { // bounds a hang only
		last = ls.next(t)
		sawTTFT = sawTTFT || last["ttft_ms"] != nil
		sawITL = sawITL || last["itl_ms"] != nil
		if device0(last)["tokens_sampled"].(float64) == 20 && sawTTFT && sawITL {
			break
		}
	}
	d = device0(last)
	if d["tokens_sampled"].(float64) != 20 || !sawTTFT || !sawITL || d["steps"].(float64) < 20 || d["blocks_used"].(float64) != 0 {
		t.Fatalf("after a 20-token request: %v (saw TTFT %v, ITL %v)", last, sawTTFT, sawITL)
	}
	if iv := last["interval_s"].(float64); iv < 0.3 || iv > 30 { // a tick is never early, but may be late
		t.Errorf("interval %vs", iv)
	}
	for time.Since(opened) < time.Second { // over three times the ReadTimeout
		ls.next(t)
	}
	f.srv.Drain()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-ls.events:
			if !ok {
				return // the stream ended
			}
		case <-deadline:
			t.Fatal("the live stream outlived the drain")
		}
	}
}
