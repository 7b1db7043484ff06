package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/internal/freeport"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestDisaggServe runs three troupe serve processes on 127.0.0.1 (roles
// decode, prefill, decode; automanaged provider) and sends concurrent
// requests with long prompts, greedy and seeded, streaming and not, to the
// first: their prompts are computed on the prefill member and their K/V
// blocks moved to a decode member (--disagg-always), and every answer is
// the text one node alone gives.
func TestDisaggServe(t *testing.T) {
	bin := buildTroupe(t)
	alone, _, _ := serve(t, bin, nil, "-m", testmodels.Path(t, "stories260K.gguf"))
	roles := []string{"decode", "prefill", "decode"}
	ports := freeport.Ports(t, 2*len(roles)) // the automanaged ports, then the advertised ones: one call, so none repeats
	var seeds []string
	for _, p := range ports[:len(roles)] {
		seeds = append(seeds, "127.0.0.1:"+strconv.Itoa(p))
	}
	nodes := startClusterWith(t, bin, ports[len(roles):], func(i int) []string {
		return []string{"--provider", "automanaged", "--automanaged-port", strconv.Itoa(ports[i]), "--seeds", strings.Join(seeds, ","),
			"--role", roles[i], "--disagg-tokens", "32", "--disagg-always"}
	})
	disagg := func() float64 {
		v, err := scrape(nodes[0].url, "troupe:cluster_disaggregated_total")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var bodies []soakRequest
	for i := range 8 {
		body := map[string]any{"prompt": strings.Repeat(fmt.Sprintf("Lily and Tom %d went to the park to play with a big red ball. ", i), 2+i%3),
			"max_tokens": 24, "n": 1 + i%2, "temperature": 0, "seed": 3}
		if i%2 == 1 {
			body["temperature"] = 0.8
		}
		bodies = append(bodies, soakRequest{"/v1/completions", body})
	}
	want := sequentially(t, alone, bodies)
	// startClusterWith waited until every node had every member's load
	// (their roles); send until one request is disaggregated.
	c := &soakClient{url: nodes[0].url, http: &http.Client{}}
	for deadline := time.Now().Add(2 * time.Minute); disagg() == 0; {
		if got, err := c.do(context.Background(), bodies[0], false); err != nil || !equalChoices(got, want[0]) {
			t.Fatalf("warm-up: %v, %v; alone %v", got, err, want[0])
		}
		if time.Now().After(deadline) {
			t.Fatal("no request was disaggregated in 2 minutes")
		}
	}
	before := disagg()
	for i, got := range runConcurrently(t, nodes[0].url, bodies) {
		if !equalChoices(got, want[i]) {
			t.Errorf("request %d: %v; alone %v", i, got, want[i])
		}
	}
	sent, _ := scrape(nodes[1].url, "troupe:cluster_kv_bytes_sent_total")
	failed, _ := scrape(nodes[0].url, "troupe:cluster_kv_transfer_failed_total")
	t.Logf("disaggregated %v of %d; K/V bytes sent by the prefill member %v; failed transfers %v", disagg()-before, len(bodies), sent, failed)
	// Placement colocates when it lacks a member's gossiped load or the
	// member is out of the topology (silent for the automanaged provider's
	// grace, actors/cluster/seeds.go): this one asks no more than one
	// disaggregated request of the 8 (actors/cluster's TestDisagg asks all
	// 8, in process). Every answer must be alone's, and no transfer fail.
	if disagg()-before < 1 || sent == 0 || failed != 0 {
		t.Errorf("disaggregated %v of %d, %v K/V bytes sent, %v failed", disagg()-before, len(bodies), sent, failed)
	}
}
