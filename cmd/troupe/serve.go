package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/hub"
	"github.com/troupe-llm/troupe/server"
)

// DefaultModel is what `troupe serve` runs with no -m and no $TROUPE_MODEL:
// SmolLM2-135M-Instruct, a small instruct model with a chat template,
// downloaded once into the cache.
const DefaultModel = "hf://bartowski/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q8_0.gguf"

func serveCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	path := fs.String("m", "", "model: a GGUF file, a safetensors directory, or hf://OWNER/REPO[/FILE] (default $TROUPE_MODEL, else "+DefaultModel+")")
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 8080, "port to listen on (0: any free port)")
	apiKey := fs.String("api-key", "", "require this key as a Bearer token on /v1 routes (default $TROUPE_API_KEY)")
	name := fs.String("served-model-name", "", "the model id clients use (default: the file or directory name)")
	tmplFile := fs.String("chat-template", "", "a Jinja chat template file, instead of the model's")
	threads := fs.Int("t", 2, "threads per device")
	devices := fs.Int("devices", 1, "device replicas")
	deviceKind := fs.String("device", "auto", "device: auto (CUDA when the model loads on a GPU, else the CPU), cpu or cuda")
	maxSeqs := fs.Int("max-num-seqs", 0, "sequences per step (0: 64)")
	maxTokens := fs.Int("max-num-batched-tokens", 0, "tokens per step (0: 512)")
	ctxLen := fs.Int("c", 0, "max model length: positions per sequence (0: the model's context)")
	blocks := fs.Int("num-kv-blocks", 0, "KV blocks per device (0: sized from the context and max-num-seqs)")
	blockSize := fs.Int("block-size", 16, "tokens per KV block")
	preempt := fs.String("preemption", "recompute", "preemption mode: recompute or swap")
	swapBlocks := fs.Int("swap-blocks", 0, "host-tier KV blocks for swap (0: as many as num-kv-blocks)")
	noPrefix := fs.Bool("no-prefix-caching", false, "turn automatic prefix caching off")
	maxQueue := fs.Int("max-queue", 256, "requests queued beyond those running before 429")
	clusterName := fs.String("cluster", "", "join the cluster of this name (with --provider and --advertise): requests are placed on its nodes")
	provider := fs.String("provider", "automanaged", "cluster membership: etcd or automanaged")
	etcdAddrs := fs.String("etcd", "127.0.0.1:2379", "etcd endpoints, comma-separated (--provider etcd)")
	advertise := fs.String("advertise", "", "HOST:PORT this node listens on for the other nodes, and is reached at")
	autoPort := fs.Int("automanaged-port", 0, "this node's automanaged port (--provider automanaged)")
	seeds := fs.String("seeds", "", "every node's automanaged HOST:PORT, comma-separated (--provider automanaged)")
	pprofOn := fs.Bool("pprof", false, "serve Go's profiles under /debug/pprof/ (behind --api-key when set)")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "on SIGINT or SIGTERM, how long requests in flight get to finish before they are cancelled")
	reqTimeout := fs.Duration("request-timeout", 10*time.Minute, "cancel a generation request running longer (408); 0: no limit")
	cacheDir := fs.String("cache-dir", "", "download cache for hf:// models (default $TROUPE_CACHE, else the user cache dir)")
	logFormat := fs.String("log-format", "auto", "log format: auto (console on a terminal, else json), console, json")
	if err := parse(fs, args); err != nil {
		return err
	}
	mode := sched.Recompute
	switch *preempt {
	case "recompute":
	case "swap":
		mode = sched.Swap
	default:
		return usageError{fmt.Sprintf("--preemption %q: want recompute or swap", *preempt)}
	}
	switch {
	case *port < 0 || *port > 65535:
		return usageError{fmt.Sprintf("--port %d is not a port", *port)}
	case *threads < 1 || *devices < 1:
		return usageError{"-t and --devices must be at least 1"}
	case *logFormat != "auto" && *logFormat != "console" && *logFormat != "json":
		return usageError{fmt.Sprintf("--log-format %q: want auto, console or json", *logFormat)}
	}
	kind, err := deviceFlag(*deviceKind)
	if err != nil {
		return err
	}
	clusterCfg := cluster.Config{Name: *clusterName, Provider: *provider, Advertise: *advertise,
		Etcd: splitList(*etcdAddrs), AutoManagedPort: *autoPort, Seeds: splitList(*seeds)}
	if *clusterName != "" {
		if err := clusterCfg.Validate(); err != nil {
			return usageError{err.Error()}
		}
	}
	log := newLogger(stderr, *logFormat)
	if *apiKey == "" {
		*apiKey = os.Getenv("TROUPE_API_KEY")
	}
	var tmpl string
	if *tmplFile != "" {
		b, err := os.ReadFile(*tmplFile)
		if err != nil {
			return fmt.Errorf("--chat-template: %w", err)
		}
		tmpl = string(b)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	spec := *path
	if spec == "" {
		if spec = os.Getenv("TROUPE_MODEL"); spec == "" {
			spec = DefaultModel
		}
	}
	local, err := resolveModel(ctx, spec, *cacheDir, stderr)
	if err != nil {
		return err
	}
	if *name == "" {
		*name = strings.TrimSuffix(filepath.Base(local), ".gguf")
	}

	// Listen before loading, so clients get 503 rather than a refused
	// connection while the model loads.
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	system := newActorSystem()
	var node *cluster.Node // when set, it shuts the system down
	defer func() {
		if node == nil {
			system.Shutdown()
		}
	}()
	log.Info().Str("model", local).Str("device", kind).Str("addr", ln.Addr().String()).Msg("loading")
	m, err := model.Open(local)
	if err != nil {
		ln.Close()
		return err
	}
	defer m.Close()
	rt, err := actors.Start(system, m, actors.Config{Devices: *devices, Workers: *threads, MaxNumSeqs: *maxSeqs,
		MaxNumBatchedTokens: *maxTokens, MaxModelLen: *ctxLen, NumBlocks: *blocks, BlockSize: *blockSize,
		Preemption: mode, NumHostBlocks: *swapBlocks, NoPrefixCaching: *noPrefix, Device: kind})
	if err != nil {
		ln.Close()
		return err
	}
	if err := rt.Fallback(); err != nil {
		log.Info().Str("why", fallbackWhy(err)).Msg("--device auto: CUDA is not usable here; running on the CPU")
	}
	if *clusterName != "" {
		node, err = cluster.Start(system, rt, clusterCfg)
		if err != nil {
			ln.Close()
			return err
		}
		log.Info().Str("cluster", *clusterName).Str("provider", *provider).Str("advertise", *advertise).Msg("joined the cluster")
	}
	srv, err := server.New(system, rt, server.Config{Cluster: node, ModelName: *name, APIKey: *apiKey, ChatTemplate: tmpl,
		MaxQueue: *maxQueue, RequestTimeout: *reqTimeout, Pprof: *pprofOn, Log: log})
	if err != nil {
		ln.Close()
		return err
	}
	httpSrv := srv.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	srv.Ready()
	cfg := rt.Config()
	log.Info().Str("addr", "http://"+ln.Addr().String()).Str("model", *name).Int("max_model_len", cfg.MaxModelLen).
		Int("kv_blocks", cfg.NumBlocks).Int("max_num_seqs", cfg.MaxNumSeqs).Msg("serving")
	fmt.Fprintf(stdout, "troupe: serving %s on http://%s\n", *name, ln.Addr())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stop() // a second signal kills the process the usual way
	log.Info().Dur("grace", *grace).Msg("draining")
	srv.Drain()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if err := httpSrv.Shutdown(shutdownCtx); errors.Is(err, context.DeadlineExceeded) {
		// Cancel what still runs: each request is answered 503 (an error
		// event, then [DONE], on a stream), never cut off silently.
		log.Warn().Int("requests", rt.NumRequests()).Msg("requests still running after the grace period; cancelling them")
		if err := rt.Stop(5 * time.Second); err != nil {
			log.Warn().Err(err).Msg("stopping the runtime")
		}
		answered, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if httpSrv.Shutdown(answered) != nil {
			httpSrv.Close()
		}
	}
	if err := rt.Stop(5 * time.Second); err != nil {
		log.Warn().Err(err).Msg("stopping the runtime")
	}
	if node != nil {
		node.Stop() // requests other nodes ran here were cancelled above: they re-run elsewhere
	}
	log.Info().Msg("stopped")
	return nil
}

// deviceFlag resolves --device (see actors.ResolveDevice): a value other
// than auto, cpu or cuda is a usage error; cuda without a GPU an error that
// says why.
func deviceFlag(v string) (string, error) {
	if v != actors.DeviceAuto && v != actors.DeviceCPU && v != actors.DeviceCUDA {
		return "", usageError{fmt.Sprintf("--device %q: want auto, cpu or cuda", v)}
	}
	return actors.ResolveDevice(v)
}

// splitList splits a comma-separated flag, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// resolveModel returns a local path for spec, downloading hf:// models.
func resolveModel(ctx context.Context, spec, cacheDir string, progress io.Writer) (string, error) {
	if !strings.HasPrefix(spec, "hf://") {
		if _, err := os.Stat(spec); err != nil {
			return "", fmt.Errorf("model %s: %w", spec, err)
		}
		return spec, nil
	}
	ref, err := hub.ParseURI(spec)
	if err != nil {
		return "", err
	}
	return hub.Download(ctx, ref, hub.Options{CacheDir: cacheDir, Progress: progress})
}

// newLogger returns a zerolog logger: console lines on a terminal, JSON
// otherwise (or as format says).
func newLogger(w io.Writer, format string) zerolog.Logger {
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				format = "console"
			}
		}
	}
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(w).With().Timestamp().Logger()
}
