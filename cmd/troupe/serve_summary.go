package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/bench"
	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model"
)

// summary is what serve says once it serves: one line on stdout, the same
// fields in the log.
type summary struct {
	name, arch, weights, device, url string
	params                           int64
	ctx, modelCtx, kvBlocks, threads int
	kvBytes                          int64
	kvType                           string
	load                             time.Duration
}

func newSummary(name string, m *model.Model, cfg actors.Config, kind string, load time.Duration, url string) summary {
	info := bench.DescribeModel(m)
	weights := info.Name // "llama 260K Q8_0": the type follows the architecture and size class
	if f := strings.SplitN(weights, " ", 3); len(f) == 3 {
		weights = f[2]
	}
	device := kind
	if kind == backend.DeviceCPU {
		device = fmt.Sprintf("cpu (%s, %s/%s)", compute.HostISA(), runtime.GOOS, runtime.GOARCH)
	}
	if cfg.Devices > 1 {
		device = fmt.Sprintf("%d × %s", cfg.Devices, device)
	}
	return summary{name: name, arch: m.Config.Arch, weights: weights, device: device, url: url, params: info.Params,
		ctx: cfg.MaxModelLen, modelCtx: m.Config.ContextLen, kvBlocks: cfg.NumBlocks, threads: cfg.Workers,
		kvBytes: cfg.KVCacheBytes(&m.Config), kvType: cfg.KVCacheType.String(), load: load}
}

// String is the summary's line.
func (s summary) String() string {
	return fmt.Sprintf("troupe: serving %s on %s (%s, %s params, %s weights; context %d of %d; KV cache %d blocks, %.1f MiB %s; %d threads on %s; loaded in %s)",
		s.name, s.url, s.arch, paramCount(s.params), s.weights, s.ctx, s.modelCtx, s.kvBlocks, float64(s.kvBytes)/(1<<20), s.kvType,
		s.threads, s.device, s.load.Round(time.Millisecond))
}

// log writes the summary's fields to ev, as the "serving" event.
func (s summary) log(ev *zerolog.Event) {
	ev.Str("addr", s.url).Str("model", s.name).Str("arch", s.arch).Int64("params", s.params).Str("weights", s.weights).
		Int("max_model_len", s.ctx).Int("model_context", s.modelCtx).Int("kv_blocks", s.kvBlocks).Int64("kv_bytes", s.kvBytes).
		Str("kv_cache_type", s.kvType).Int("threads", s.threads).Str("device", s.device).Dur("load", s.load).Msg("serving")
}

// paramCount writes a parameter count as llama-bench does: millions below
// a billion ("0.26 M"), else billions ("1.10 B").
func paramCount(n int64) string {
	if n < 1e9 {
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f B", float64(n)/1e9)
}
