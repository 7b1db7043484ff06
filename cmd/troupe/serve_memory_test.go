package main

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/server"
)

// TestParseBytes: --models-memory's sizes, as Ollama and llama.cpp write
// them; anything else an error.
func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "8GiB": 8 << 30, "8 GiB": 8 << 30, "4.5GB": 4.5e9,
		"512MiB": 512 << 20, "512mb": 512e6, "2G": 2 << 30, "16k": 16 << 10, "1TB": 1e12, "3B": 3} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "-1GiB", "8 gigs", "1e3", "9999999PB", "1.2.3G"} {
		if n, err := parseBytes(in); err == nil {
			t.Errorf("%q: %d, want an error", in, n)
		}
	}
}

// TestServeModelsMemoryFlags: --max-loaded-models (llama-server's
// --models-max, $OLLAMA_MAX_LOADED_MODELS) and --models-memory land in their
// fields; --models-memory and --mmproj are refused where they cannot work.
func TestServeModelsMemoryFlags(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, args := range [][]string{{"--max-loaded-models", "3"}, {"--models-max", "3"}} {
		c, fs, err := parseServeFS(t, append([]string{"--models-dir", "d", "--models-memory", "1.5GiB"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Models.fromEnv(env(map[string]string{"OLLAMA_MAX_LOADED_MODELS": "7"}), flagsSet(fs)); err != nil {
			t.Fatal(err)
		}
		if c.Models.Max != 3 || c.Models.Memory != 3<<29 {
			t.Errorf("%v: max %d, memory %d", args, c.Models.Max, c.Models.Memory)
		}
	}
	c, fs, _ := parseServeFS(t, "--models-dir", "d")
	if err := c.Models.fromEnv(env(map[string]string{"OLLAMA_MAX_LOADED_MODELS": "2"}), flagsSet(fs)); err != nil || c.Models.Max != 2 {
		t.Errorf("$OLLAMA_MAX_LOADED_MODELS 2: %d %v", c.Models.Max, err)
	}
	if err := c.Models.fromEnv(env(map[string]string{"OLLAMA_MAX_LOADED_MODELS": "0"}), flagsSet(fs)); err == nil {
		t.Error("$OLLAMA_MAX_LOADED_MODELS 0: no error")
	}
	if _, _, err := parseServeFS(t, "--models-dir", "d", "--models-memory", "lots"); err == nil || !strings.Contains(err.Error(), "models-memory") {
		t.Errorf("--models-memory lots: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--models-memory", "1GiB"}, "--models-memory"},
		{[]string{"--models-max", "2"}, "--models-max"},
		{[]string{"--models-dir", "d", "--max-loaded-models", "0"}, "--max-loaded-models"},
		{[]string{"--models-dir", "d", "--mmproj", "p.gguf"}, "--mmproj"},
	} {
		c, fs, err := parseServeFS(t, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		c.Models.given = flagsSet(fs)
		var ue usageError
		if err := c.validateModels(); !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error naming %s", tc.args, err, tc.want)
		}
	}
}

// TestMeasureManaged: the size the budget counts for a model before it
// loads is its file's bytes plus the KV pool its runtime then has (every
// device, the host tier for swap), plus its adapters.
func TestMeasureManaged(t *testing.T) {
	path := testmodels.Path(t, "stories260K.gguf")
	st := stat(t, path)
	for _, args := range [][]string{{}, {"-c", "64", "--max-num-seqs", "3"}, {"--num-kv-blocks", "140", "--devices", "2"},
		{"--preemption", "swap", "--swap-blocks", "24", "--block-size", "32"}} {
		c, _, err := parseServeFS(t, append([]string{"--models-dir", "d"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		rtCfg := c.Runtime
		if c.Preemption == "swap" {
			rtCfg.Preemption = sched.Swap
		}
		spec := server.LoadSpec{Name: "s", Path: path}
		size, err := c.measureManaged(rtCfg, spec)
		if err != nil {
			t.Fatal(err)
		}
		sys := newActorSystem()
		rt, closeFn, err := c.loadManaged(sys, rtCfg, backend.DeviceCPU, spec)
		if err != nil {
			t.Fatal(err)
		}
		got := rt.Config()
		kv := got.KVCacheBytes(&rt.Model().Config)
		host := got
		host.NumBlocks = got.NumHostBlocks
		want := int64(got.Devices) * (kv + host.KVCacheBytes(&rt.Model().Config))
		rt.Stop(0)
		closeFn()
		sys.Shutdown()
		if size.Weights != st.Size() || size.KV != want || size.KV == 0 || size.Adapters != 0 {
			t.Errorf("%v: measured %+v, want weights %d and KV %d", args, size, st.Size(), want)
		}
	}
}

// TestServeModelsOverBudget: a --models-memory no model fits is a one-line
// usage error (exit 2) naming the model and both sizes, before serving.
func TestServeModelsOverBudget(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(testmodels.Path(t, "stories260K.gguf"), filepath.Join(dir, "small.gguf")); err != nil {
		t.Fatal(err)
	}
	c, fs, err := parseServeFS(t, "--models-dir", dir, "--models-memory", "64KiB", "--port", "0", "--log-format", "json")
	if err != nil {
		t.Fatal(err)
	}
	c.Models.given = flagsSet(fs)
	err = c.serveModels(context.Background(), io.Discard, io.Discard)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `"small"`) || !strings.Contains(err.Error(), "64.00 KiB") ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("serve at 64KiB: %v, want a one-line usage error naming small and both sizes", err)
	}
	wantUsage(t, "troupe serve: over the memory budget", "serve", "--models-dir", dir, "--models-memory", "64KiB", "--port", "0", "--log-format", "json")
}

// BenchmarkModelSwitch is the manager's model switch at
// --max-loaded-models 1: unloading one model and loading another (the
// runtime stopped, the file unmapped; the next opened, repacked as serve
// does by default, its runtime started), through POST /models/load, and
// the same followed by a one-token completion. Both models are the same
// TinyLlama-1.1B-shape file under two names ($TROUPE_BENCH_SWITCH_MODEL,
// default ~/.cache/troupe-bench/tinyllama-1.1b-Q4_0.gguf, which `make
// bench-compare` or `troupe synth --shape tinyllama-1.1b --type Q4_0`
// writes), so its pages stay in the page cache: a warm switch.
func BenchmarkModelSwitch(b *testing.B) {
	path := os.Getenv("TROUPE_BENCH_SWITCH_MODEL")
	if path == "" {
		home, _ := os.UserHomeDir()
		path = filepath.Join(home, ".cache", "troupe-bench", "tinyllama-1.1b-Q4_0.gguf")
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no TinyLlama-shape file: %v (set TROUPE_BENCH_SWITCH_MODEL)", err)
	}
	dir := b.TempDir()
	for _, name := range []string{"a", "b"} {
		if err := os.Symlink(path, filepath.Join(dir, name+".gguf")); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name, repack string
		complete     bool
	}{{"load/repack=auto", "auto", false}, {"load/repack=none", "none", false}, {"load+1token/repack=auto", "auto", true}} {
		b.Run(bc.name, func(b *testing.B) {
			var c serveConfig
			fs := newFlags("serve", io.Discard)
			c.register(fs)
			if err := parse(fs, []string{"--models-dir", dir, "--max-loaded-models", "1", "--repack", bc.repack, "-c", "512"}); err != nil {
				b.Fatal(err)
			}
			sys := newActorSystem()
			defer sys.Shutdown()
			cfg := server.ManagerConfig{Dir: dir, MaxLoaded: 1, KeepAlive: -1, Server: c.Server}
			cfg.Load = func(_ context.Context, system *actor.ActorSystem, spec server.LoadSpec) (*actors.Runtime, func(), error) {
				return c.loadManaged(system, c.Runtime, backend.DeviceCPU, spec)
			}
			cfg.Size = func(spec server.LoadSpec) (server.ModelSize, error) { return c.measureManaged(c.Runtime, spec) }
			mgr, err := server.NewManager(sys, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer mgr.Close()
			ts := httptest.NewServer(mgr.Handler())
			defer ts.Close()
			ask := func(name string) {
				route, body := "/models/load", `{"model":"`+name+`"}`
				if bc.complete {
					route, body = "/v1/completions", `{"model":"`+name+`","prompt":"Once upon a time","max_tokens":1}`
				}
				if code, msg := post(b, ts.URL+route, body); code != 200 {
					b.Fatalf("%s: %d %s", name, code, msg)
				}
			}
			ask("a") // the first load is not a switch
			i := 0
			for b.Loop() {
				i++
				ask([]string{"a", "b"}[i%2])
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/switch")
		})
	}
}
