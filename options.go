package troupe

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
)

// Option configures Open.
type Option func(*options) error

// options is what the Options set; the zero value logs nothing, registers
// no metrics, and runs one CPU device with 2 threads.
type options struct {
	log        zerolog.Logger
	slog       slog.Handler
	hasLog     bool
	metrics    prometheus.Registerer
	runtime    actors.Config
	device     string
	name       string
	template   string
	toolParser string
	kvBytes    int64 // 0: the runtime's default
}

// WithLogger sends troupe's log lines (requests, the runtime's events) to
// log. Without it, or WithSlog, troupe logs nothing; it never writes to a
// global logger.
func WithLogger(log zerolog.Logger) Option {
	return func(o *options) error {
		o.log, o.hasLog = log, true
		return nil
	}
}

// WithSlog sends troupe's log lines, and those of the actor system it
// starts, to h.
func WithSlog(h slog.Handler) Option {
	return nonNil("WithSlog", "handler", h == nil, func(o *options) { o.slog = h })
}

// WithMetrics registers troupe's metrics (the troupe: names GET /metrics
// serves, vLLM's) on reg, which may be prometheus.DefaultRegisterer if the
// program asks for it. Without it they are kept apart, on a registry of
// troupe's own. The Go and process collectors are not registered: a
// program has its own.
func WithMetrics(reg prometheus.Registerer) Option {
	return nonNil("WithMetrics", "registerer", reg == nil, func(o *options) { o.metrics = reg })
}

// WithThreads bounds the goroutines a forward pass uses on each CPU
// device (default 2), so that troupe leaves the program's other work its
// share of the machine.
func WithThreads(n int) Option {
	return atLeastOne("WithThreads", n, func(o *options) { o.runtime.Workers = n })
}

// WithKVCacheBytes bounds the memory of the KV cache (K and V of every
// layer, per device). The model's weights are mapped from its file, not
// copied, and come on top. Default: enough for 64 sequences of 512 tokens
// or 4 full contexts, at most 2 GiB.
func WithKVCacheBytes(n int64) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("troupe: WithKVCacheBytes(%d): must be positive", n)
		}
		o.kvBytes = n
		return nil
	}
}

// WithContextLength bounds each sequence's positions, prompt and output
// together (default: the model's context).
func WithContextLength(n int) Option {
	return atLeastOne("WithContextLength", n, func(o *options) { o.runtime.MaxModelLen = n })
}

// WithMaxSequences bounds the sequences that run at once on a device
// (vLLM's max_num_seqs; default 64); requests past it wait.
func WithMaxSequences(n int) Option {
	return atLeastOne("WithMaxSequences", n, func(o *options) { o.runtime.MaxNumSeqs = n })
}

// nonNil is the Option name(v): set, unless v is nil (isNil), a nil what.
func nonNil(name, what string, isNil bool, set func(*options)) Option {
	return func(o *options) error {
		if isNil {
			return fmt.Errorf("troupe: %s: a nil %s", name, what)
		}
		set(o)
		return nil
	}
}

// atLeastOne is the Option name(n): set, unless n is below 1.
func atLeastOne(name string, n int, set func(*options)) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("troupe: %s(%d): at least 1", name, n)
		}
		set(o)
		return nil
	}
}

// WithDevice chooses where the model runs: "cpu" (the default), "cuda",
// or "auto" (CUDA when usable, else the CPU).
func WithDevice(kind string) Option {
	return func(o *options) error {
		switch kind {
		case "cpu", "cuda", "auto":
			o.device = kind
			return nil
		}
		return fmt.Errorf("troupe: WithDevice(%q): want cpu, cuda or auto", kind)
	}
}

// WithBackend runs the model's requests on b instead of a device troupe
// makes (a test's scripted backend: package troupetest). The model file
// still gives the tokenizer and the chat template. The caller closes b.
func WithBackend(b actors.Backend) Option {
	return nonNil("WithBackend", "backend", b == nil, func(o *options) { o.runtime.Backends = []actors.Backend{b} })
}

// WithChatTemplate overrides the model's chat template: the name of a
// built-in format (chatml, llama3, mistral, gemma, ...: those serve's
// --chat-template takes) or Jinja source. A model without a template uses
// chatml.
func WithChatTemplate(nameOrSource string) Option {
	return func(o *options) error {
		o.template = nameOrSource
		return nil
	}
}

// WithToolCallParser names the format of the model's tool calls (hermes,
// llama3_json, mistral, ...: serve's --tool-call-parser); by default it is
// detected from the chat template.
func WithToolCallParser(name string) Option {
	return func(o *options) error {
		o.toolParser = name
		return nil
	}
}

// WithModelName sets the model's name in log lines and metrics (default:
// the file's name without .gguf).
func WithModelName(name string) Option {
	return func(o *options) error {
		o.name = name
		return nil
	}
}
