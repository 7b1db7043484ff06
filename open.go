package troupe

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/server"
)

// Model is an open model with its own runtime: an actor system, the
// devices that run it, and the request pipeline that troupe serve's HTTP
// routes use. Its methods are safe for concurrent use; requests made at
// once are batched together.
type Model struct {
	m      *model.Model
	system *actor.ActorSystem
	rt     *actors.Runtime
	srv    *server.Server
	unreg  func() // takes the metrics off the program's registry

	closeOnce sync.Once
	closeErr  error
}

// deadLetterInterval is the actor system's dead-letter throttle interval.
const deadLetterInterval = 10 * time.Millisecond

// stopTimeout bounds how long Close waits for the runtime's actors.
const stopTimeout = 10 * time.Second

// Open loads the GGUF model at path (a file, or a safetensors checkpoint's
// folder) and starts its runtime. If ctx ends before the runtime is ready,
// Open frees what it made and returns ctx's error (reading the file itself
// is not interrupted); ctx does not outlive Open: each request has its own.
// Close frees everything Open made.
func Open(ctx context.Context, path string, opts ...Option) (*Model, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("troupe: open %s: %w", path, err)
	}
	m, err := model.Open(path)
	if err != nil {
		return nil, fmt.Errorf("troupe: %w", err)
	}
	t := &Model{m: m}
	if err := t.start(ctx, path, &o); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// start starts the actor system, the runtime and the pipeline over t.m.
func (t *Model) start(ctx context.Context, path string, o *options) error {
	cfg := o.runtime
	if len(cfg.Backends) == 0 {
		cfg.NewBackend = backend.For(t.m, deviceKind(o.device))
	}
	if o.kvBytes > 0 {
		bs := max(cfg.BlockSize, 16)
		one := kv.CacheConfig{Layers: t.m.Config.Layers, KVDim: t.m.Config.KVDim(), BlockSize: bs, NumBlocks: 1, Type: cfg.KVCacheType}
		perBlock := one.Bytes()
		cfg.BlockSize, cfg.NumBlocks = bs, int(o.kvBytes/max(perBlock, 1))
		if cfg.NumBlocks < 1 {
			return fmt.Errorf("troupe: WithKVCacheBytes(%d): less than one KV block (%d bytes)", o.kvBytes, perBlock)
		}
	}
	// A message to an actor that just stopped starts protoactor's
	// dead-letter throttle, a goroutine that ends after the interval: a
	// short one lets Close leave nothing behind for long.
	t.system = actor.NewActorSystem(actor.WithLoggerFactory(actorLogger(o.slog)),
		actor.WithDeadLetterThrottleInterval(deadLetterInterval))
	rt, err := actors.Start(t.system, t.m, cfg)
	if err != nil {
		return fmt.Errorf("troupe: %w", err)
	}
	t.rt = rt
	scfg, err := serverConfig(o, path, rt)
	if err != nil {
		return err
	}
	if t.srv, err = server.New(t.system, rt, scfg); err != nil {
		return fmt.Errorf("troupe: %w", err)
	}
	if o.metrics != nil {
		if t.unreg, err = registerMetrics(o.metrics, t.srv.Gatherer()); err != nil {
			return err
		}
	}
	t.srv.Ready()
	return ctx.Err()
}

// serverConfig is the pipeline's configuration from o.
func serverConfig(o *options, path string, rt *actors.Runtime) (server.Config, error) {
	// A program's calls wait for their turn (MaxQueue): they are not
	// refused as an HTTP client past the queue would be.
	c := server.Config{ModelName: o.name, ToolCallParser: o.toolParser, Log: zerolog.Nop(), NoWebUI: true, MaxQueue: 1 << 20}
	if c.ModelName == "" {
		c.ModelName = strings.TrimSuffix(filepath.Base(path), ".gguf")
	}
	switch {
	case o.hasLog:
		c.Log = o.log
	case o.slog != nil:
		c.Log = zerolog.New(slogWriter{slog.New(o.slog)})
	}
	c.ChatTemplate = o.template
	if src, ok := server.BuiltinTemplate(o.template); ok {
		c.ChatTemplate = src
	}
	if c.ChatTemplate == "" && rt.ChatTemplate() == "" {
		c.ChatTemplate, _ = server.BuiltinTemplate(server.FallbackTemplate)
	}
	return c, nil
}

// deviceKind is actors/backend's name for WithDevice's kind.
func deviceKind(kind string) string {
	switch kind {
	case "cuda":
		return backend.DeviceCUDA
	case "auto":
		return backend.DeviceAuto
	}
	return backend.DeviceCPU
}

// Handler is troupe serve's HTTP API over this model (OpenAI's
// /v1/chat/completions, /v1/completions, /v1/embeddings, Anthropic's
// /v1/messages, Ollama's /api/..., /metrics), for a program to mount on a
// server of its own. Its /metrics serves troupe's own registry.
func (t *Model) Handler() http.Handler { return t.srv.Handler() }

// Runtime is the actor runtime under the model, for token-level calls
// (Runtime.Stream, Runtime.Generate).
func (t *Model) Runtime() *actors.Runtime { return t.rt }

// Close cancels what still runs, stops the runtime and its actor system,
// takes the metrics off the program's registry and unmaps the model. No
// goroutine of troupe's is left. It is safe to call more than once.
func (t *Model) Close() error {
	t.closeOnce.Do(func() {
		if t.srv != nil {
			t.srv.Drain()
		}
		if t.unreg != nil {
			t.unreg()
		}
		if t.rt != nil {
			if err := t.rt.Stop(stopTimeout); err != nil {
				t.closeErr = fmt.Errorf("troupe: close: %w", err)
			}
		}
		if t.system != nil {
			t.system.Shutdown()
		}
		if err := t.m.Close(); err != nil && t.closeErr == nil {
			t.closeErr = fmt.Errorf("troupe: close: %w", err)
		}
	})
	return t.closeErr
}
