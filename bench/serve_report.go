package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// ServeReport is vllm bench serve's result: counts, throughputs and the
// latencies of the successful requests.
type ServeReport struct {
	URL, Endpoint, Model string
	NumPrompts           int
	RequestRate          float64 // +Inf: all at once
	MaxConcurrency       int     // 0: no limit
	OutputLen            int     // the max_tokens asked for, before the range ratio

	Completed    int    // successful requests
	Failed       int    // HTTP errors, error events, broken streams
	FirstError   string // the failure of the first failed request, by request number
	Unfinished   int    // not sent, or cancelled, when the run was interrupted
	Interrupted  bool   // the context ended before every request finished
	NoUsage      int    // successful requests without a usage chunk: their tokens are estimates
	ShortOutputs int    // successful requests that generated fewer tokens than max_tokens

	Duration                            time.Duration // from the first request sent to the last finished
	TotalInputTokens, TotalOutputTokens int

	RequestThroughput    float64 // successful requests per second
	OutputThroughput     float64 // output tokens per second
	TotalTokenThroughput float64 // input and output tokens per second

	Goodput        []SLO
	GoodRequests   int     // successful requests meeting every objective
	RequestGoodput float64 // GoodRequests per second

	TTFT, TPOT, ITL, E2EL LatencyStats

	Requests []RequestResult // each request's result, in the order they were sent
}

const reportWidth = 50

// WriteText writes the report as vllm bench serve prints it, with the
// failures and caveats it found below.
func (r *ServeReport) WriteText(w io.Writer) error {
	var b strings.Builder
	line := func(label string, v any) {
		if f, ok := v.(float64); ok {
			v = fmt.Sprintf("%.2f", f)
		}
		fmt.Fprintf(&b, "%-40s %v\n", label, v)
	}
	b.WriteString(centered(" Serving Benchmark Result ", '=') + "\n")
	line("Successful requests:", r.Completed)
	line("Failed requests:", r.Failed)
	if r.Interrupted {
		line("Unfinished requests (interrupted):", r.Unfinished)
	}
	if r.MaxConcurrency > 0 {
		line("Maximum request concurrency:", r.MaxConcurrency)
	}
	line("Benchmark duration (s):", r.Duration.Seconds())
	line("Total input tokens:", r.TotalInputTokens)
	line("Total generated tokens:", r.TotalOutputTokens)
	line("Request throughput (req/s):", r.RequestThroughput)
	if len(r.Goodput) > 0 {
		line("Request goodput (req/s):", r.RequestGoodput)
	}
	line("Output token throughput (tok/s):", r.OutputThroughput)
	line("Total Token throughput (tok/s):", r.TotalTokenThroughput)
	for _, s := range []struct {
		title, name string
		stats       LatencyStats
	}{
		{"Time to First Token", "TTFT", r.TTFT},
		{"Time per Output Token (excl. 1st token)", "TPOT", r.TPOT},
		{"Inter-token Latency", "ITL", r.ITL},
		{"End-to-end Latency", "E2EL", r.E2EL},
	} {
		b.WriteString(centered(s.title, '-') + "\n")
		line("Mean "+s.name+" (ms):", s.stats.Mean)
		line("Median "+s.name+" (ms):", s.stats.Median)
		line("P99 "+s.name+" (ms):", s.stats.P99)
	}
	b.WriteString(strings.Repeat("=", reportWidth) + "\n")
	if r.Failed > 0 {
		fmt.Fprintf(&b, "%d of %d requests failed; the first: %s\n", r.Failed, r.NumPrompts, r.FirstError)
	}
	if r.Interrupted {
		fmt.Fprintf(&b, "interrupted: %d of %d requests did not finish and are not counted\n", r.Unfinished, r.NumPrompts)
	}
	if len(r.Goodput) > 0 {
		var objs []string
		for _, s := range r.Goodput {
			objs = append(objs, fmt.Sprintf("%s <= %g ms", s.Metric, float64(s.Limit)/float64(time.Millisecond)))
		}
		fmt.Fprintf(&b, "goodput: %d requests met %s\n", r.GoodRequests, strings.Join(objs, ", "))
	}
	if r.NoUsage > 0 {
		fmt.Fprintf(&b, "%d requests had no usage chunk: their output tokens are content chunks, their input tokens prompt words\n", r.NoUsage)
	}
	if r.ShortOutputs > 0 {
		fmt.Fprintf(&b, "%d requests generated fewer tokens than max_tokens (the server stopped at EOS or its context? see --ignore-eos)\n", r.ShortOutputs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// centered pads s with c on both sides to the report's width, as Python's
// "{:c^50}" does.
func centered(s string, c byte) string {
	pad := max(reportWidth-len(s), 0)
	return strings.Repeat(string(c), pad/2) + s + strings.Repeat(string(c), pad-pad/2)
}

// MarshalJSON writes the report with the keys of vllm bench serve's
// --save-result file (latencies in milliseconds), and a request rate of
// "inf" for all at once. The per-request results are left out.
func (r *ServeReport) MarshalJSON() ([]byte, error) {
	var rate any = r.RequestRate
	if math.IsInf(r.RequestRate, 1) {
		rate = "inf"
	}
	m := map[string]any{
		"api_url": r.URL, "endpoint_type": r.Endpoint, "model_id": r.Model,
		"num_prompts": r.NumPrompts, "request_rate": rate, "max_concurrency": r.MaxConcurrency, "output_len": r.OutputLen,
		"completed": r.Completed, "failed": r.Failed, "unfinished": r.Unfinished, "interrupted": r.Interrupted,
		"duration": r.Duration.Seconds(), "total_input_tokens": r.TotalInputTokens, "total_output_tokens": r.TotalOutputTokens,
		"request_throughput": r.RequestThroughput, "output_throughput": r.OutputThroughput,
		"total_token_throughput": r.TotalTokenThroughput, "no_usage": r.NoUsage, "short_outputs": r.ShortOutputs,
	}
	if r.FirstError != "" {
		m["first_error"] = r.FirstError
	}
	if len(r.Goodput) > 0 {
		slos := map[string]float64{}
		for _, s := range r.Goodput {
			slos[s.Metric] = float64(s.Limit) / float64(time.Millisecond)
		}
		m["goodput_slos_ms"], m["request_goodput"] = slos, r.RequestGoodput
	}
	for name, s := range map[string]LatencyStats{"ttft": r.TTFT, "tpot": r.TPOT, "itl": r.ITL, "e2el": r.E2EL} {
		m["mean_"+name+"_ms"], m["median_"+name+"_ms"], m["std_"+name+"_ms"], m["p99_"+name+"_ms"] = s.Mean, s.Median, s.Std, s.P99
	}
	return json.Marshal(m)
}
