package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/bench"
	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/messages"
)

// benchUsage is troupe bench -h.
const benchUsage = `usage: troupe bench model [flags]   (llama-bench: pp and tg tokens/s of the forward pass; -h for its flags)
       troupe bench batched [flags] (llama-batched-bench's table; -h for its flags)
       troupe bench serve [flags]   (vllm bench serve: load an OpenAI-compatible server; -h for its flags)
       troupe bench embed [flags]   (embedding sentences/s at batch sizes; -h for its flags)
       troupe bench spec [flags]    (speculative decoding: tokens/s with and without, acceptance; -h for its flags)
       troupe bench vision [flags]  (an image's encoding time and the time to the first token with it; -h for its flags)
`

func benchCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"want a benchmark: model, batched, serve, embed, spec or vision"}
	}
	switch args[0] {
	case "model":
		return benchModel(args[1:], stdout, stderr)
	case "batched":
		return benchBatched(args[1:], stdout, stderr)
	case "serve":
		return benchServe(args[1:], stdout, stderr)
	case "embed":
		return benchEmbed(args[1:], stdout, stderr)
	case "spec":
		return benchSpec(args[1:], stdout, stderr)
	case "vision":
		return benchVision(args[1:], stdout, stderr) // bench_vision.go
	case "-h", "--help", "help":
		fmt.Fprint(stderr, benchUsage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown benchmark %q: want model, batched, serve, embed, spec or vision", args[0])}
}

// benchModel is llama-bench: prefill and decode speed of the forward pass.
func benchModel(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench model", stderr)
	path := fs.String("m", "", "model: a GGUF file or a safetensors directory (required)")
	p := fs.Int("p", 512, "pp test: prompt tokens processed as one batch (0: skip)")
	n := fs.Int("n", 128, "tg test: tokens generated one at a time (0: skip)")
	reps := fs.Int("r", 5, "repetitions of each test")
	threads := fs.Int("t", 2, "threads of the forward pass")
	output := outputFlag(fs, "text (llama-bench's markdown table; md is the same) or json")
	profile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the run to this file")
	kvType := kvCacheTypeFlag(fs)
	repack := repackFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	o := bench.ModelOptions{Prompt: *p, Gen: *n, Reps: *reps, Workers: *threads, Seed: 1, KVCache: *kvType}
	switch {
	case *path == "":
		return usageError{"-m MODEL is required"}
	case *output != "text" && *output != "md" && *output != "json":
		return usageError{fmt.Sprintf("--output %q: want text (or md) or json", *output)}
	}
	if err := o.Validate(); err != nil {
		return usageError{err.Error()}
	}
	m, err := openModelWith(*path, *repack)
	if err != nil {
		return err
	}
	defer m.Close()
	noteRepack(stderr, m)
	stopProfile, err := startProfile(*profile)
	if err != nil {
		return err
	}
	res, err := bench.Model(m, o)
	kvBytes := bench.ModelKVBytes(m, o)
	stopProfile()
	if err != nil {
		return err
	}
	info := bench.DescribeModel(m)
	backend := "CPU " + compute.HostISA().String()
	peak := bench.PeakRSS()
	if *output == "json" {
		type row struct {
			Model    string  `json:"model"`
			Size     int64   `json:"size_bytes"`
			Params   int64   `json:"params"`
			Backend  string  `json:"backend"`
			Threads  int     `json:"threads"`
			Test     string  `json:"test"`
			NPrompt  int     `json:"n_prompt"`
			NGen     int     `json:"n_gen"`
			AvgTS    float64 `json:"avg_ts"`
			StddevTS float64 `json:"stddev_ts"`
			PeakRSS  int64   `json:"peak_rss_bytes"`
			TypeKV   string  `json:"type_kv"`
			KVBytes  int64   `json:"kv_bytes"`
		}
		rows := make([]row, 0, len(res))
		for _, r := range res {
			rw := row{Model: info.Name, Size: info.Bytes, Params: info.Params, Backend: backend, Threads: *threads,
				Test: r.Test, AvgTS: r.Mean(), StddevTS: r.Std(), PeakRSS: peak, TypeKV: o.KVCache.String(), KVBytes: kvBytes}
			if r.Test[:2] == "pp" {
				rw.NPrompt = r.Tokens
			} else {
				rw.NGen = r.Tokens
			}
			rows = append(rows, rw)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	fmt.Fprintln(stdout, "| model                          |       size |     params | backend         | threads |            test |                  t/s |")
	fmt.Fprintln(stdout, "| ------------------------------ | ---------: | ---------: | --------------- | ------: | --------------: | -------------------: |")
	for _, r := range res {
		fmt.Fprintf(stdout, "| %-30s | %6.2f MiB | %10s | %-15s | %7d | %15s | %11.2f ± %6.2f |\n",
			info.Name, float64(info.Bytes)/(1<<20), paramCount(info.Params), backend, *threads, r.Test, r.Mean(), r.Std())
	}
	fmt.Fprintf(stdout, "\npeak memory (VmHWM) %.1f MiB; KV cache %s, %.2f MiB; %s, %s/%s, %d repetitions after a warm-up\n",
		float64(peak)/(1<<20), o.KVCache, float64(kvBytes)/(1<<20), runtime.Version(), runtime.GOOS, runtime.GOARCH, *reps)
	return nil
}

func benchBatched(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench batched", stderr)
	path := fs.String("m", "", "model: a GGUF file or a safetensors directory (required)")
	npp := fs.Int("npp", 128, "prompt tokens per sequence")
	ntg := fs.Int("ntg", 64, "tokens to generate per sequence (at least 2)")
	npl := fs.String("npl", "1,4,8,16", "batch sizes, comma-separated: sequences run in parallel")
	threads := fs.Int("t", 2, "threads of the forward pass")
	ctxLen := fs.Int("c", 0, "context per sequence (0: npp+ntg)")
	output := outputFlag(fs, "text (a table) or json (one object per row)")
	profile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the run to this file")
	kvType := kvCacheTypeFlag(fs)
	repack := repackFlag(fs)
	schemaPath := fs.String("json-schema", "", "also decode each batch under this JSON schema (structured output), right after the same batch unconstrained, and compare")
	if err := parse(fs, args); err != nil {
		return err
	}
	schema, err := readSchema(*schemaPath)
	if err != nil {
		return err
	}
	pl, err := parseSizes(*npl)
	switch {
	case *path == "":
		return usageError{"-m MODEL is required"}
	case err != nil:
		return usageError{fmt.Sprintf("-npl %q: %v", *npl, err)}
	case *npp < 1:
		return usageError{fmt.Sprintf("-npp %d: want at least 1", *npp)}
	case *ntg < 2:
		return usageError{fmt.Sprintf("-ntg %d: want at least 2 (the first token comes from the prefill)", *ntg)}
	case *threads < 1:
		return usageError{"-t must be at least 1"}
	case *ctxLen != 0 && *ctxLen < *npp+*ntg:
		return usageError{fmt.Sprintf("-c %d: want 0 or at least npp+ntg = %d", *ctxLen, *npp+*ntg)}
	case *output != "text" && *output != "json":
		return usageError{fmt.Sprintf("--output %q: want text or json", *output)}
	}
	m, err := openModelWith(*path, *repack)
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	system := newActorSystem()
	defer system.Shutdown()
	o := bench.BatchedOptions{PP: *npp, TG: *ntg, PL: pl, Workers: *threads, ContextLen: *ctxLen, Seed: 1, System: system, KVCache: *kvType}
	nCtx := *ctxLen
	if nCtx == 0 {
		nCtx = *npp + *ntg
	}
	if *output == "text" {
		fmt.Fprintf(stdout, "model %s: %s, %d layers, dim %d, vocab %d\n", *path, m.Config.Arch, m.Config.Layers, m.Config.Dim, m.Config.VocabSize)
		fmt.Fprintf(stdout, "context %d per sequence, threads %d, KV cache %s, prefix caching off, random prompts (seed %d), greedy, EOS ignored\n\n", nCtx, *threads, o.KVCache, o.Seed)
		fmt.Fprintln(stdout, "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |")
		fmt.Fprintln(stdout, "|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|")
	}
	stopProfile, err := startProfile(*profile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var rows []bench.BatchedRow
	enc := json.NewEncoder(stdout)
	for _, rn := range batchedRuns(pl, schema) { // a row at a time, so each is shown as soon as it is measured
		o.PL, o.Grammar = []int{rn.b}, rn.g
		got, err := bench.Batched(ctx, m, o)
		if err != nil {
			return err
		}
		r := got[0]
		rows = append(rows, r)
		if *output == "json" {
			if err := enc.Encode(jsonRow(r, *threads, nCtx)); err != nil {
				return err
			}
			continue
		}
		if err := writeBatchedRow(stdout, r); err != nil {
			return err
		}
	}
	if *output == "json" {
		return nil
	}
	if schema != nil {
		printSchemaRows(stdout, *schemaPath, rows)
	}
	return writeOverheadTable(stdout, rows)
}

// batchedRun is one row of bench batched: a batch size, unconstrained
// (g nil) or under a grammar.
type batchedRun struct {
	b int
	g *messages.Grammar
}

// batchedRuns lists the rows to measure: per batch size, unconstrained,
// then under the schema when there is one.
func batchedRuns(pl []int, schema *messages.Grammar) []batchedRun {
	var runs []batchedRun
	for _, b := range pl {
		runs = append(runs, batchedRun{b, nil})
		if schema != nil {
			runs = append(runs, batchedRun{b, schema})
		}
	}
	return runs
}

// writeBatchedRow writes one row of llama-batched-bench's table.
func writeBatchedRow(stdout io.Writer, r bench.BatchedRow) error {
	mark := ""
	if r.Grammar {
		mark = " schema"
	}
	_, err := fmt.Fprintf(stdout, "| %5d | %6d | %4d | %6d | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f |%s\n",
		r.PP, r.TG, r.B, r.NKV, r.TPP.Seconds(), r.SPP(), r.TTG.Seconds(), r.STG(), r.T.Seconds(), r.S(), mark)
	return err
}

// overheadHeader is the notes under bench batched's table and the header
// of its decode overhead table.
const overheadHeader = `
S_TG = B*(TG-1)/T_TG: the first token of each sequence comes from the prefill step
(llama-batched-bench decodes TG steps after its prefill and counts B*TG).

Decode steps on the device's clock, and their time outside the forward pass and sampling
(batcher scheduling, messages, sequence actors, detokenization):
|    B | steps |  step ms | forward ms | overhead ms | overhead % |
|------|-------|----------|------------|-------------|------------|
`

// writeOverheadTable writes the notes under the table and the decode
// overhead per batch size.
func writeOverheadTable(stdout io.Writer, rows []bench.BatchedRow) error {
	fmt.Fprint(stdout, overheadHeader)
	for _, r := range rows {
		fwd := r.DecodeForward.Seconds() * 1e3 / float64(max(r.DecodeSteps, 1))
		if _, err := fmt.Fprintf(stdout, "| %4d | %5d | %8.3f | %10.3f | %11.3f | %9.1f%% |\n", r.B, r.DecodeSteps,
			r.DecodeStep().Seconds()*1e3, fwd, r.DecodeOverhead().Seconds()*1e3, r.DecodeOverheadPercent()); err != nil {
			return err
		}
	}
	return nil
}

// jsonRow is a row for scripts, with llama-batched-bench's jsonl names
// (times in seconds, speeds in tokens per second) and the overhead.
func jsonRow(r bench.BatchedRow, threads, nCtx int) any {
	perStep := func(ns float64) float64 { return ns / 1e6 / float64(max(r.DecodeSteps, 1)) }
	return struct {
		NThreads     int     `json:"n_threads"`
		NCtx         int     `json:"n_ctx"`
		PP           int     `json:"pp"`
		TG           int     `json:"tg"`
		PL           int     `json:"pl"`
		NKV          int     `json:"n_kv"`
		TPP          float64 `json:"t_pp"`
		SpeedPP      float64 `json:"speed_pp"`
		TTG          float64 `json:"t_tg"`
		SpeedTG      float64 `json:"speed_tg"`
		T            float64 `json:"t"`
		Speed        float64 `json:"speed"`
		PrefillSteps int64   `json:"prefill_steps"`
		DecodeSteps  int64   `json:"decode_steps"`
		StepMs       float64 `json:"decode_step_ms"`
		ForwardMs    float64 `json:"decode_forward_ms"`
		OverheadMs   float64 `json:"decode_overhead_ms"`
		OverheadPct  float64 `json:"decode_overhead_pct"`
		Grammar      bool    `json:"json_schema,omitempty"`
		CompileMs    float64 `json:"compile_ms,omitempty"`
		VocabMs      float64 `json:"vocab_ms,omitempty"`
		Masks        int64   `json:"masks,omitempty"`
		MaskHits     int64   `json:"mask_hits,omitempty"`
		MaskNs       int64   `json:"mask_ns,omitempty"`
	}{threads, nCtx, r.PP, r.TG, r.B, r.NKV, r.TPP.Seconds(), r.SPP(), r.TTG.Seconds(), r.STG(), r.T.Seconds(), r.S(),
		r.PrefillSteps, r.DecodeSteps, perStep(float64(r.DecodeWall)), perStep(float64(r.DecodeForward)),
		perStep(float64(r.DecodeWall - r.DecodeForward)), r.DecodeOverheadPercent(),
		r.Grammar, r.CompileTime.Seconds() * 1e3, r.VocabTime.Seconds() * 1e3, r.Masks, r.MaskHits, r.MaskCost().Nanoseconds()}
}

// readSchema reads --json-schema's file (nil when none is named).
func readSchema(path string) (*messages.Grammar, error) {
	if path == "" {
		return nil, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--json-schema: %w", err)
	}
	return &messages.Grammar{Kind: messages.GrammarJSONSchema, Source: string(src)}, nil
}

// printSchemaRows compares each batch under the schema with the same batch
// unconstrained (the row before it), and reports the masks' cost.
func printSchemaRows(w io.Writer, path string, rows []bench.BatchedRow) {
	fmt.Fprintf(w, "\nUnder the JSON schema %s, each batch right after the same batch unconstrained:\n", path)
	fmt.Fprintln(w, "|    B | S_TG free t/s | S_TG schema t/s | ratio | compile ms | vocab ms |  masks | cache hits | µs per mask |")
	fmt.Fprintln(w, "|------|---------------|-----------------|-------|------------|----------|--------|------------|-------------|")
	for i := 1; i < len(rows); i++ {
		free, r := rows[i-1], rows[i]
		if !r.Grammar || free.Grammar {
			continue
		}
		fmt.Fprintf(w, "| %4d | %13.2f | %15.2f | %5.3f | %10.2f | %8.2f | %6d | %9.1f%% | %11.2f |\n", r.B, free.STG(), r.STG(), r.STG()/free.STG(),
			r.CompileTime.Seconds()*1e3, r.VocabTime.Seconds()*1e3, r.Masks, 100*r.MaskHitRate(), r.MaskCost().Seconds()*1e6)
	}
}

// outputFlag defines -o and --output, the one output flag of every bench
// subcommand: text (the default) or json, described by what.
func outputFlag(fs *flag.FlagSet, what string) *string {
	out := new(string)
	fs.StringVar(out, "o", "text", "output: "+what)
	fs.StringVar(out, "output", "text", "output: "+what+" (same as -o)")
	return out
}

// startProfile starts a CPU profile into path (none when path is empty) and
// returns the function that ends it.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// parseSizes parses a comma-separated list of positive integers.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}
