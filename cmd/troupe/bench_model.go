package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/troupe-llm/troupe/bench"
	"github.com/troupe-llm/troupe/compute"
)

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
