package bench_test

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/bench"
	"github.com/troupe-llm/troupe/server"
	"github.com/troupe-llm/troupe/server/servetest"
)

// startTroupe serves stories260K's OpenAI API on a loopback port, as
// `troupe serve` does, with SmolLM2's chat template for the chat endpoint.
func startTroupe(t *testing.T) string {
	t.Helper()
	m := openModel(t, "stories260K.gguf")
	sys := servetest.QuietSystem(t)
	rt, err := actors.Start(sys, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCPU)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(sys, rt, server.Config{ModelName: "stories", ChatTemplate: servetest.Template(t, servetest.SmolLM2), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	url := servetest.Listen(t, srv, rt, nil)
	srv.Ready()
	return url
}

// TestServeTroupe loads a real troupe server over stories260K: with a
// concurrency limit, with Poisson arrivals, and through the chat endpoint.
// Every request succeeds with exactly its max_tokens (ignore_eos), the
// token counts come from the usage chunks, and the latencies add up.
func TestServeTroupe(t *testing.T) {
	url := startTroupe(t)
	const n, inputLen, outputLen = 16, 16, 16
	for _, tc := range []struct {
		name     string
		endpoint string
		rate     float64
		conc     int
	}{
		{"concurrency 4", "completions", 0, 4},
		{"poisson 200 per second", "completions", 200, 0},
		{"chat, concurrency 4", "chat", 0, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := bench.Serve(context.Background(), bench.ServeOptions{URL: url, Endpoint: tc.endpoint,
				NumPrompts: n, RequestRate: tc.rate, MaxConcurrency: tc.conc, InputLen: inputLen, OutputLen: outputLen, IgnoreEOS: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Completed != n || r.Failed != 0 || r.Interrupted {
				t.Fatalf("%d completed, %d failed (%s), interrupted %t", r.Completed, r.Failed, r.FirstError, r.Interrupted)
			}
			if r.Model != "stories" || r.NoUsage != 0 || r.ShortOutputs != 0 || r.TotalOutputTokens != n*outputLen {
				t.Errorf("model %q, %d without usage, %d short, %d output tokens; want stories, 0, 0, %d",
					r.Model, r.NoUsage, r.ShortOutputs, r.TotalOutputTokens, n*outputLen)
			}
			// The prompt words are one token each in stories260K's vocabulary:
			// the prompt is its words and BOS, and a chat template adds more.
			if tc.endpoint == "completions" && r.TotalInputTokens != n*(inputLen+1) || r.TotalInputTokens < n*(inputLen+1) {
				t.Errorf("%d input tokens, want %d for completions (16 words and BOS a prompt), more for chat", r.TotalInputTokens, n*(inputLen+1))
			}
			for _, s := range []struct {
				name  string
				s     bench.LatencyStats
				wantN int
			}{{"TTFT", r.TTFT, n}, {"TPOT", r.TPOT, n}, {"ITL", r.ITL, 0}, {"E2EL", r.E2EL, n}} {
				if s.wantN != 0 && s.s.N != s.wantN || s.s.N == 0 || !(s.s.Mean > 0) || !(s.s.Median > 0) || s.s.P99 < s.s.Median {
					t.Errorf("%s: %+v", s.name, s.s)
				}
			}
			if r.TTFT.Mean >= r.E2EL.Mean || r.TPOT.Mean >= r.E2EL.Mean || !(r.RequestThroughput > 0) || !(r.OutputThroughput > r.RequestThroughput) {
				t.Errorf("TTFT %.2f ms, TPOT %.2f ms, E2EL %.2f ms, %.1f req/s, %.1f tok/s",
					r.TTFT.Mean, r.TPOT.Mean, r.E2EL.Mean, r.RequestThroughput, r.OutputThroughput)
			}
			for i, res := range r.Requests {
				if res.OutputTokens != outputLen || res.TTFT <= 0 || res.Latency < res.TTFT || len(res.ITL) != res.Chunks-1 {
					t.Errorf("request %d: %d tokens, %d chunks, TTFT %v, E2EL %v", i, res.OutputTokens, res.Chunks, res.TTFT, res.Latency)
				}
			}
		})
	}
}
