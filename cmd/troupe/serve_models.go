package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/hub"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/server"
)

// modelsConfig is serve's several-models mode (server.Manager): a
// directory of GGUF files, each loaded on its first request.
type modelsConfig struct {
	Dir         string          // --models-dir: "" is the one-model mode
	Max         int             // --max-loaded-models (llama-server's --models-max)
	Memory      int64           // --models-memory: bytes; 0 no bound
	Queue       int             // --models-queue: requests waiting for busy models; 0 none
	NoAutoload  bool            // --no-models-autoload
	KeepAlive   time.Duration   // --keep-alive
	RuntimeLoRA bool            // --enable-lora-runtime
	explicitM   bool            // -m was given (not $TROUPE_MODEL or the default): served too
	given       map[string]bool // the flags on the command line
}

// register defines the several-models flags on fs.
func (c *modelsConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Dir, "models-dir", "", "serve every GGUF file of this directory (and the models /api/pull, /api/create and /api/copy add), each loaded on its first request (llama-server's router mode)")
	fs.IntVar(&c.Max, "max-loaded-models", 4, "with --models-dir: models loaded at once; loading another unloads the least recently used idle one (default $OLLAMA_MAX_LOADED_MODELS, else 4)")
	fs.Var(bytesFlag{&c.Memory}, "models-memory", "with --models-dir: the memory the loaded models may take (`size` such as 8GiB, 4.5GB or 512MiB; a model counts its file, its KV pool and its adapters); loading one unloads least recently used idle models until it fits (0: no bound)")
	fs.IntVar(&c.Queue, "models-queue", 512, "with --models-dir: requests that may wait, in order, for a model to load while the models in its way are busy; past it, 503 (0: no queue, 503 at once) (default $OLLAMA_MAX_QUEUE, else 512)")
	fs.BoolVar(&c.NoAutoload, "no-models-autoload", false, "with --models-dir: a request for a model not loaded is refused until POST /models/load loads it")
	fs.DurationVar(&c.KeepAlive, "keep-alive", 5*time.Minute, "with --models-dir: how long a model stays loaded after its last request when the request sets no keep_alive (0: unload at once; negative: never) (default $OLLAMA_KEEP_ALIVE, else 5m)")
	fs.BoolVar(&c.RuntimeLoRA, "enable-lora-runtime", false, "with --models-dir: serve vLLM's /v1/load_lora_adapter and /v1/unload_lora_adapter (default on when $VLLM_ALLOW_RUNTIME_LORA_UPDATING is true or 1)")
}

// validate reports a several-models setting that cannot work.
func (c *serveConfig) validateModels() error {
	mc := c.Models
	if c.NoMMProj && c.MMProj != "" {
		return usageError{"--no-mmproj and --mmproj: give one of the two"}
	}
	if mc.Dir == "" {
		for _, f := range []string{"max-loaded-models", "models-max", "models-memory", "models-queue", "no-models-autoload", "keep-alive", "enable-lora-runtime"} {
			if mc.given[f] && (f != "enable-lora-runtime" || len(c.LoRAModules) == 0) {
				return usageError{"--" + f + " needs --models-dir (several models; one served model stays loaded)"}
			}
		}
		if len(c.LoRAModules) == 0 {
			return nil
		}
	}
	var msg string
	switch {
	case mc.Dir == "" && c.Cluster.Name != "":
		msg = "--lora-modules serves adapters as model names on one node: drop --cluster"
	case mc.Dir == "" && len(c.LoRA) > 0:
		msg = "--lora applies adapters to every request, --lora-modules serves them as model names: give one of the two"
	case mc.Dir == "" && c.DraftModel != "":
		msg = "--model-draft does not combine with --lora-modules"
	case mc.Dir == "" && c.MMProj != "":
		msg = "--mmproj does not combine with --lora-modules"
	case mc.Dir == "" && c.Pipeline.Stages > 0:
		msg = "--pipeline-stages does not combine with --lora-modules"
	case mc.Max < 1:
		msg = fmt.Sprintf("--max-loaded-models %d: want at least 1", mc.Max)
	case mc.Queue < 0:
		msg = fmt.Sprintf("--models-queue %d: want 0 (no queue) or more", mc.Queue)
	case c.MMProj != "":
		msg = "--mmproj applies to one model: drop --models-dir or --mmproj"
	case c.Cluster.Name != "":
		msg = "--cluster serves one model: drop --models-dir or --cluster"
	case len(c.LoRA) > 0:
		msg = "--lora applies to one model: with --models-dir, give adapters in /api/create's Modelfile (ADAPTER) or /v1/load_lora_adapter"
	case c.DraftModel != "":
		msg = "--model-draft serves one model: drop --models-dir or --model-draft"
	case c.Server.ModelName != "" && !mc.explicitM && mc.Dir != "":
		msg = "--served-model-name names -m's model: with --models-dir, each model is named after its file"
	}
	if msg != "" {
		return usageError{msg}
	}
	return nil
}

// keepAliveEnv reads $OLLAMA_KEEP_ALIVE when --keep-alive was not given:
// a duration or a number of seconds.
func keepAliveEnv(v string, d *time.Duration) error {
	if v == "" {
		return nil
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		*d = time.Duration(secs * float64(time.Second))
		return nil
	}
	x, err := time.ParseDuration(v)
	if err != nil {
		return usageError{fmt.Sprintf("$OLLAMA_KEEP_ALIVE %q: want a duration (5m) or seconds", v)}
	}
	*d = x
	return nil
}

// serveModels runs the several-models server until ctx ends.
func (c *serveConfig) serveModels(ctx context.Context, stdout, stderr io.Writer) error {
	cfg, log, err := c.managerConfig(ctx, stderr)
	if err != nil {
		return err
	}
	system := newActorSystem()
	defer system.Shutdown()
	mgr, err := server.NewManager(system, cfg)
	if errors.Is(err, server.ErrOverBudget) {
		return usageError{strings.TrimPrefix(err.Error(), "server: ")}
	}
	if err != nil {
		return err
	}
	defer mgr.Close()
	mgr.Start(time.Second)
	if c.Models.Dir == "" {
		if err := mgr.Preload(ctx, cfg.Models[0].Name); err != nil {
			return err
		}
	}
	ln, err := listen(c.Host, c.Port)
	if err != nil {
		return err
	}
	defer ln.Close()
	httpSrv := mgr.HTTPServer()
	wait := serveHTTP(httpSrv, ln)
	fmt.Fprintln(stdout, c.modelsBanner(cfg.Models, ln.Addr()))
	if err := wait(ctx); err != nil {
		return err
	}
	log.Info().Dur("grace", c.ShutdownGrace).Msg("draining")
	mgr.Drain()
	grace, cancel := context.WithTimeout(context.Background(), c.ShutdownGrace)
	defer cancel()
	_ = mgr.WaitIdle(grace)
	closeHTTP(httpSrv)
	log.Info().Msg("stopped")
	return nil
}

// managerConfig is serveModels' set-up: the manager's config from the
// flags (with -m's model, resolved, when it is served too), and the logger.
func (c *serveConfig) managerConfig(ctx context.Context, stderr io.Writer) (server.ManagerConfig, zerolog.Logger, error) {
	mc := c.Models
	srvCfg, rtCfg := c.Server, c.Runtime
	kind, err := deviceFlag(c.Device)
	if err != nil {
		return server.ManagerConfig{}, zerolog.Logger{}, err
	}
	log, _ := c.baseConfigs(stderr, &rtCfg, &srvCfg)
	if srvCfg.ChatTemplate, err = readChatTemplate(c.ChatTemplateFile); err != nil {
		return server.ManagerConfig{}, log, err
	}
	cfg := server.ManagerConfig{Server: srvCfg, Dir: mc.Dir, MaxLoaded: mc.Max, MaxBytes: mc.Memory, MaxQueue: mc.Queue, KeepAlive: mc.KeepAlive,
		NoAutoload: mc.NoAutoload, RuntimeLoRA: mc.RuntimeLoRA, LoRAModules: c.LoRAModules, NoProjectors: c.NoMMProj}
	if mc.Dir == "" { // --lora-modules over one model: loaded at start, never unloaded
		cfg.KeepAlive = -1
	}
	if mc.explicitM || mc.Dir == "" {
		src, err := c.servedModel(ctx, srvCfg.ModelName, stderr)
		if err != nil {
			return server.ManagerConfig{}, log, err
		}
		cfg.Models = []server.ModelSource{src}
		cfg.Server.ModelName, cfg.Server.ModelAliases = "", nil
	}
	cfg.Load = func(_ context.Context, system *actor.ActorSystem, spec server.LoadSpec) (*actors.Runtime, func(), error) {
		return c.loadManaged(system, rtCfg, kind, spec)
	}
	cfg.Size = func(spec server.LoadSpec) (server.ModelSize, error) { return c.measureManaged(rtCfg, spec) }
	cfg.Pull = func(ctx context.Context, uri string, progress func(completed, total int64)) (string, error) {
		ref, err := hub.ParseURI(uri)
		if err != nil {
			return "", err
		}
		return hub.Download(ctx, ref, hub.Options{CacheDir: c.CacheDir,
			OnProgress: func(_ string, completed, total int64) { progress(completed, total) }})
	}
	cfg.ListRepo = listRepo(c.CacheDir)
	return cfg, log, nil
}

// listRepo lists the files of hf://OWNER/REPO[@REVISION] on the hub, for
// choosing a GGUF by quant (server.HubURIs): the manager's and troupe run's.
func listRepo(cacheDir string) func(ctx context.Context, uri string) ([]string, error) {
	return func(ctx context.Context, uri string) ([]string, error) {
		ref, err := hub.ParseURI(uri)
		if err != nil {
			return nil, err
		}
		return hub.ListFiles(ctx, ref, hub.Options{CacheDir: cacheDir})
	}
}

// servedModel is -m's model as the manager serves it: resolved (downloaded
// when hf://), named (name, else after its file), with a hub repository's
// projector unless --no-mmproj.
func (c *serveConfig) servedModel(ctx context.Context, name string, stderr io.Writer) (server.ModelSource, error) {
	var proj string
	var err error
	if c.Model, err = hubModelURI(ctx, c.Model, c.CacheDir, stderr); err != nil { // hubmmproj.go
		return server.ModelSource{}, err
	}
	if !c.NoMMProj {
		if proj, err = hubProjector(ctx, c.Model, c.CacheDir, stderr); err != nil { // hubmmproj.go
			return server.ModelSource{}, err
		}
	}
	local, err := resolveModel(ctx, c.Model, c.CacheDir, stderr)
	if err != nil {
		return server.ModelSource{}, err
	}
	if name == "" {
		name = modelName(local)
	}
	if proj != "" {
		fmt.Fprintf(stderr, "troupe: %s: loading the repository's projector %s: the model takes images (--no-mmproj: text only)\n", name, filepath.Base(proj))
	}
	return server.ModelSource{Name: name, Path: local, Projector: proj}, nil
}

// modelsBanner is the line serveModels prints once it listens at addr.
func (c *serveConfig) modelsBanner(models []server.ModelSource, addr net.Addr) string {
	mc := c.Models
	if mc.Dir == "" {
		var names []string
		for _, lm := range c.LoRAModules {
			names = append(names, lm.Name)
		}
		return fmt.Sprintf("serving %s and its adapters %s on http://%s", models[0].Name, strings.Join(names, ", "), addr)
	}
	bound := ""
	if mc.Memory > 0 {
		bound = " and " + server.HumanBytes(mc.Memory)
	}
	return fmt.Sprintf("serving the models of %s on http://%s (loaded on demand, at most %d at once%s)", mc.Dir, addr, mc.Max, bound)
}

// loadManaged opens one model of the manager with its adapters and starts
// its runtime (adapters run on the CPU device, as --lora's).
func (c *serveConfig) loadManaged(system *actor.ActorSystem, rtCfg actors.Config, kind string, spec server.LoadSpec) (*actors.Runtime, func(), error) {
	m, err := model.OpenWith(spec.Path, model.LoadOptions{Repack: c.Repack})
	if err != nil {
		return nil, nil, err
	}
	if err := c.checkModel(&m.Config); err != nil {
		m.Close()
		return nil, nil, err
	}
	var specs []loraSpec
	for _, a := range spec.Adapters {
		specs = append(specs, loraSpec{Path: a.Path, Scale: a.Scale})
	}
	closeAdapters, err := openAdapters(m, specs, c.MaxLoRARank)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	if len(specs) > 0 {
		kind = backend.DeviceCPU
	}
	// The model's projector (a --models-dir subdirectory's mmproj, a pulled
	// repository's, a hub model's): images, as --mmproj's.
	encoder, closeProjector, err := openProjector(spec.Projector, m) // mmproj.go
	if err != nil {
		closeAdapters()
		m.Close()
		return nil, nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	rtCfg.Encoder = encoder
	if spec.MaxModelLen > 0 {
		rtCfg.MaxModelLen = spec.MaxModelLen
	}
	devices := backend.NewSelector(m, kind)
	rtCfg.NewBackend = devices.New
	rt, err := actors.Start(system, m, rtCfg)
	if err != nil {
		closeProjector()
		closeAdapters()
		m.Close()
		return nil, nil, err
	}
	return rt, func() {
		closeProjector()
		closeAdapters()
		m.Close()
	}, nil
}

// measureManaged is what loading spec takes, without loading it: the
// model file's bytes, its KV pool as the runtime will size it (every
// device, and the host tier for swap) and its adapter files.
func (c *serveConfig) measureManaged(rtCfg actors.Config, spec server.LoadSpec) (server.ModelSize, error) {
	var s server.ModelSize
	st, err := os.Stat(spec.Path)
	if err != nil {
		return s, err
	}
	var m *model.Model
	if st.IsDir() {
		m, _, err = model.LoadSafetensorsWith(spec.Path, model.LoadOptions{Repack: model.RepackNone})
		s.Weights = dirBytes(spec.Path)
	} else {
		m, _, err = model.LoadGGUFWith(spec.Path, model.LoadOptions{Repack: model.RepackNone})
		s.Weights = st.Size()
	}
	if err != nil {
		return s, err
	}
	if spec.Projector != "" { // its projector, mapped as the model is
		pst, err := os.Stat(spec.Projector)
		if err != nil {
			return s, err
		}
		s.Weights += pst.Size()
	}
	mc := m.Config
	m.Close()
	if spec.MaxModelLen > 0 {
		rtCfg.MaxModelLen = spec.MaxModelLen
	}
	rtCfg = rtCfg.WithDefaults(&mc)
	perDevice := rtCfg.KVCacheBytes(&mc)
	host := rtCfg
	host.NumBlocks = rtCfg.NumHostBlocks
	s.KV = int64(rtCfg.Devices) * (perDevice + host.KVCacheBytes(&mc))
	for _, a := range spec.Adapters {
		st, err := os.Stat(a.Path)
		if err != nil {
			return s, err
		}
		s.Adapters += st.Size()
	}
	return s, nil
}

// dirBytes is the size of the files in dir (a safetensors checkpoint).
func dirBytes(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && !e.IsDir() {
			n += info.Size()
		}
	}
	return n
}

// bytesFlag is a memory size: a number of bytes with an optional unit, as
// Ollama and llama.cpp write them: KB, MB, GB, TB (powers of 1000), KiB,
// MiB, GiB, TiB (powers of 1024), K, M, G, T (as the binary ones); a
// space before the unit and its case do not matter.
type bytesFlag struct{ n *int64 }

func (b bytesFlag) String() string {
	if b.n == nil || *b.n == 0 {
		return "0"
	}
	return server.HumanBytes(*b.n)
}

func (b bytesFlag) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b.n = n
	return nil
}

// parseBytes reads a size for bytesFlag.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}[unit]
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || f < 0 || f*mult >= 1<<62 {
		return 0, fmt.Errorf("%q: want a size such as 8GiB, 4.5GB, 512MiB or a number of bytes", s)
	}
	return int64(f * mult), nil
}

// fromEnv fills the several-models settings the flags left at their
// defaults from the environment (Ollama's and vLLM's variables).
func (c *modelsConfig) fromEnv(getenv func(string) string, set map[string]bool) error {
	c.given = set
	if !set["keep-alive"] {
		if err := keepAliveEnv(getenv("OLLAMA_KEEP_ALIVE"), &c.KeepAlive); err != nil {
			return err
		}
	}
	if v := getenv("OLLAMA_MAX_LOADED_MODELS"); v != "" && !set["max-loaded-models"] && !set["models-max"] {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return usageError{fmt.Sprintf("$OLLAMA_MAX_LOADED_MODELS %q: want a whole number of at least 1", v)}
		}
		c.Max = n
	}
	if v := getenv("OLLAMA_MAX_QUEUE"); v != "" && !set["models-queue"] {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return usageError{fmt.Sprintf("$OLLAMA_MAX_QUEUE %q: want a whole number, 0 or more", v)}
		}
		c.Queue = n
	}
	if v := strings.ToLower(getenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING")); !set["enable-lora-runtime"] && (v == "1" || v == "true") {
		c.RuntimeLoRA = true
	}
	return nil
}

// flagsSet are the names of the flags given on fs's command line.
func flagsSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
