package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeOpenAI streams two content chunks and a usage chunk for every
// completion, or answers 500 when fail is set.
func fakeOpenAI(t *testing.T, fail bool) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake","object":"model"}]}`)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"the device is on fire","type":"server_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{`{"choices":[{"text":"a"}]}`, `{"choices":[{"text":"b"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, "[DONE]"} {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestBenchServe runs `troupe bench serve` against a fake server: the text
// report has vllm bench serve's lines, --output json its keys.
func TestBenchServe(t *testing.T) {
	url := fakeOpenAI(t, false)
	args := []string{"bench", "serve", "--url", url, "--num-prompts", "8", "--max-concurrency", "2", "--input-len", "4", "--output-len", "2",
		"--goodput", "ttft:10000,e2el:10000"}
	out := troupeOK(t, args...)
	wantReport(t, out,
		"8 requests to "+url+" (completions), request rate inf/s, max concurrency 2\n",
		"model fake\n",
		"============ Serving Benchmark Result ============\n",
		"Successful requests:                     8\n",
		"Failed requests:                         0\n",
		"Total input tokens:                      40\n",
		"Total generated tokens:                  16\n",
		"Request goodput (req/s):",
		"---------------Time to First Token----------------\n",
		"-----Time per Output Token (excl. 1st token)------\n",
		"P99 ITL (ms):",
		"Median E2EL (ms):",
		"goodput: 8 requests met ttft <= 10000 ms, e2el <= 10000 ms\n",
	)

	dataset := filepath.Join(t.TempDir(), "prompts.txt")
	if err := os.WriteFile(dataset, []byte("Once upon a time\nThe end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := troupe(t, "bench", "serve", "--url", url, "--num-prompts", "3", "--request-rate", "1000",
		"--dataset", dataset, "--model", "m", "--output", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("json: %v: %s", err, out)
	}
	if r["completed"] != 3.0 || r["failed"] != 0.0 || r["request_rate"] != 1000.0 || r["model_id"] != "m" ||
		r["total_output_tokens"] != 6.0 || !(r["p99_ttft_ms"].(float64) > 0) || !(r["median_e2el_ms"].(float64) > 0) {
		t.Errorf("json: %s", out)
	}
}

// TestBenchServeAllFailed: the report is written, and the command fails
// with the first error.
func TestBenchServeAllFailed(t *testing.T) {
	out, errOut, code := troupe(t, "bench", "serve", "--url", fakeOpenAI(t, true), "--num-prompts", "3")
	if code != 1 || !strings.Contains(out, "Failed requests:                         3\n") ||
		errOut != "troupe bench: every request failed; the first: request 0: HTTP 500 Internal Server Error: the device is on fire\n" {
		t.Errorf("exit %d\nstdout:\n%s\nstderr: %q", code, out, errOut)
	}
}

// TestBenchServeUsage: bad flags are one-line usage errors with exit status 2.
func TestBenchServeUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"zero rate", []string{"--request-rate", "0"}, `--request-rate "0"`},
		{"bad rate", []string{"--request-rate", "fast"}, `--request-rate "fast"`},
		{"bad endpoint", []string{"--endpoint", "embeddings"}, `--endpoint "embeddings"`},
		{"no prompts", []string{"--num-prompts", "0"}, "--num-prompts 0"},
		{"negative concurrency", []string{"--max-concurrency", "-1"}, "--max-concurrency -1"},
		{"no input", []string{"--input-len", "0"}, "--input-len 0"},
		{"no output", []string{"--output-len", "0"}, "--output-len 0"},
		{"range ratio", []string{"--range-ratio", "1.5"}, "--range-ratio 1.5"},
		{"goodput without a value", []string{"--goodput", "ttft"}, `--goodput "ttft"`},
		{"goodput metric", []string{"--goodput", "itl:5"}, `goodput metric "itl"`},
		{"bad output", []string{"--output", "xml"}, `--output "xml"`},
		{"bad URL", []string{"--url", "localhost:8080"}, `server URL "localhost:8080"`},
		{"bad seed", []string{"--seed", "-1"}, "invalid value"},
		{"stray argument", []string{"extra"}, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := troupe(t, append([]string{"bench", "serve"}, tc.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errOut)
			}
			// A flag the flag package cannot parse prints the flags first.
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, "troupe bench: ") || !strings.Contains(last, tc.msg) ||
				tc.name != "bad seed" && len(lines) > 1 {
				t.Errorf("stderr %q: want one line, troupe bench: ... %s", errOut, tc.msg)
			}
		})
	}
	out, errOut, code := troupe(t, "bench", "serve", "-h")
	if code != 0 || !strings.Contains(errOut, "usage: troupe bench serve [flags]") || !strings.Contains(errOut, "-max-concurrency") || out != "" {
		t.Errorf("-h: exit %d, stderr %q", code, errOut)
	}
}
