package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/bench"
)

const benchServeUsage = `usage: troupe bench serve [flags]

Load an OpenAI-compatible server (troupe serve, vLLM, llama-server, ...) as
vllm bench serve does: streaming requests, greedy, max_tokens the output
length, and a report of TTFT, TPOT, ITL and end-to-end latency.

Random prompts are --input-len words from a fixed list of common English
words, about a token each on any tokenizer; the token counts reported come
from the server's usage chunks. --ignore-eos (default true) sends
"ignore_eos": true, which vLLM, troupe and llama-server read (llama-server
also has a server-wide --ignore-eos flag); use --ignore-eos=false for a
server that rejects fields outside OpenAI's schema.

Ctrl-C stops the run and reports the requests that finished.

flags:
`

func benchServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench serve", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchServeUsage)
		printFlags(fs)
	}
	baseURL := fs.String("url", "http://127.0.0.1:8080", "the server's base URL")
	model := fs.String("model", "", "the model field of the requests (default: the first model of GET /v1/models)")
	endpoint := fs.String("endpoint", "completions", "completions (/v1/completions) or chat (/v1/chat/completions)")
	numPrompts := fs.Int("num-prompts", 100, "requests to send")
	rate := fs.String("request-rate", "inf", "requests per second, Poisson arrivals; inf: all at once")
	maxConc := fs.Int("max-concurrency", 0, "requests in flight at most (0: no limit)")
	inputLen := fs.Int("input-len", 128, "words per random prompt (about a token each)")
	outputLen := fs.Int("output-len", 64, "max_tokens of each request")
	dataset := fs.String("dataset", "", "a file of prompts, one per line, sent in order (instead of random prompts)")
	rangeRatio := fs.Float64("range-ratio", 0, "lengths uniform in [len*(1-r), len*(1+r)], r in [0, 1]")
	seed := fs.Uint64("seed", 0, "seed of the prompts, lengths and arrivals")
	apiKey := fs.String("api-key", "", "sent as a Bearer token (default $OPENAI_API_KEY)")
	goodput := fs.String("goodput", "", "objectives for goodput, METRIC:MS, comma-separated: ttft:300,tpot:50,e2el:2000")
	ignoreEOS := fs.Bool("ignore-eos", true, `send "ignore_eos": true so each request generates --output-len tokens`)
	output := outputFlag(fs, "text (vllm bench serve's report) or json (one object, its result keys)")
	if err := parse(fs, args); err != nil {
		return err
	}
	rps, rateErr := parseRate(*rate)
	var slos []bench.SLO
	var goodputErr error
	if *goodput != "" {
		slos, goodputErr = bench.ParseGoodput(*goodput)
	}
	switch {
	case rateErr != nil:
		return usageError{fmt.Sprintf("--request-rate %q: want inf or a positive number of requests per second", *rate)}
	case goodputErr != nil:
		return usageError{fmt.Sprintf("--goodput %q: %s", *goodput, strings.TrimPrefix(goodputErr.Error(), "bench: "))}
	case *endpoint != "completions" && *endpoint != "chat":
		return usageError{fmt.Sprintf("--endpoint %q: want completions or chat", *endpoint)}
	case *numPrompts < 1:
		return usageError{fmt.Sprintf("--num-prompts %d: want at least 1", *numPrompts)}
	case *maxConc < 0:
		return usageError{fmt.Sprintf("--max-concurrency %d: want 0 (no limit) or more", *maxConc)}
	case *dataset == "" && *inputLen < 1:
		return usageError{fmt.Sprintf("--input-len %d: want at least 1", *inputLen)}
	case *outputLen < 1:
		return usageError{fmt.Sprintf("--output-len %d: want at least 1", *outputLen)}
	case !(*rangeRatio >= 0 && *rangeRatio <= 1):
		return usageError{fmt.Sprintf("--range-ratio %v: want a number in [0, 1]", *rangeRatio)}
	case *output != "text" && *output != "json":
		return usageError{fmt.Sprintf("--output %q: want text or json", *output)}
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("OPENAI_API_KEY")
	}
	o := bench.ServeOptions{URL: *baseURL, Model: *model, Endpoint: *endpoint, APIKey: *apiKey,
		NumPrompts: *numPrompts, RequestRate: rps, MaxConcurrency: *maxConc,
		InputLen: *inputLen, OutputLen: *outputLen, RangeRatio: *rangeRatio, Seed: *seed,
		IgnoreEOS: *ignoreEOS, Goodput: slos}
	if *dataset != "" {
		if err := readDataset(&o, *dataset); err != nil {
			return err
		}
	}
	if err := o.Validate(); err != nil { // what the checks above do not cover: the URL
		return usageError{strings.TrimPrefix(err.Error(), "bench: ")}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *output == "text" {
		writeServeHeader(stdout, &o, *rate, *dataset)
	}
	r, err := bench.Serve(ctx, o)
	if err != nil {
		return err
	}
	if *output == "json" {
		err = json.NewEncoder(stdout).Encode(r)
	} else {
		fmt.Fprintf(stdout, "model %s\n\n", r.Model)
		err = r.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if r.Completed == 0 && r.Failed > 0 {
		return fmt.Errorf("every request failed; the first: %s", r.FirstError)
	}
	return nil
}

// readDataset reads --dataset's prompts into o.
func readDataset(o *bench.ServeOptions, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	o.Prompts, err = bench.ReadPrompts(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeServeHeader writes what the run will send, before it starts; rate
// and dataset as the flags spell them.
func writeServeHeader(stdout io.Writer, o *bench.ServeOptions, rate, dataset string) {
	prompts := fmt.Sprintf("random prompts of %d words", o.InputLen)
	if dataset != "" {
		prompts = fmt.Sprintf("%d prompts from %s", len(o.Prompts), dataset)
	}
	conc := "no limit"
	if o.MaxConcurrency > 0 {
		conc = strconv.Itoa(o.MaxConcurrency)
	}
	fmt.Fprintf(stdout, "%d requests to %s (%s), request rate %s/s, max concurrency %s\n", o.NumPrompts, o.URL, o.Endpoint, rate, conc)
	fmt.Fprintf(stdout, "%s, max_tokens %d, range ratio %g, seed %d, ignore_eos %t, greedy, streamed\n", prompts, o.OutputLen, o.RangeRatio, o.Seed, o.IgnoreEOS)
}

// parseRate parses --request-rate: "inf", or a positive number.
func parseRate(s string) (float64, error) {
	if strings.EqualFold(s, "inf") {
		return math.Inf(1), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 1) {
		return 0, fmt.Errorf("bad rate %q", s)
	}
	return v, nil
}
