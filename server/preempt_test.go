package server_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/troupe-llm/troupe/actors"
)

// TestPreemptionUsage runs requests on a KV pool too small for all of them
// at once: each response's usage.preemptions counts its choices'
// preemptions, the responses add up to the scheduler's
// troupe:num_preemptions_total, and troupe:request_preempted_total counts
// the requests that were preempted.
func TestPreemptionUsage(t *testing.T) {
	f := newFixture(t, options{rt: actors.Config{MaxNumSeqs: 4, NumBlocks: 8, BlockSize: 16}})
	cases := loadCases(t)
	const requests = 6
	var mu sync.Mutex
	var total, preempted int
	parallel(requests, func(i int) {
		body := fmt.Sprintf(`{"prompt": %q, "max_tokens": 48, "n": 2, "temperature": 0, "ignore_eos": true}`, cases[i%len(cases)].Prompt)
		resp, b := post(t, f.url+"/v1/completions", body)
		var r struct {
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != 200 {
			t.Errorf("request %d: %d %s", i, resp.StatusCode, b)
			return
		}
		n, _ := r.Usage["preemptions"].(float64)
		mu.Lock()
		defer mu.Unlock()
		total += int(n)
		if n > 0 {
			preempted++
		}
	})
	f.waitIdle(t)
	want := f.metric(t, "troupe:num_preemptions_total")
	t.Logf("%d preemptions in %d of %d requests", total, preempted, requests)
	if want == 0 {
		t.Fatal("no preemption happened: the pool is not small enough for the test to mean anything")
	}
	if float64(total) != want {
		t.Errorf("the responses' usage counts %d preemptions, troupe:num_preemptions_total %v", total, want)
	}
	if got := f.metric(t, "troupe:request_preempted_total"); got != float64(preempted) {
		t.Errorf("troupe:request_preempted_total %v, want %d", got, preempted)
	}
	// stories260K's layers have no sliding window: nothing is freed behind one.
	if got := f.metric(t, "troupe:kv_window_freed_blocks_total"); got != 0 {
		t.Errorf("troupe:kv_window_freed_blocks_total %v for a model without windows", got)
	}
}
