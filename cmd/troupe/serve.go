package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/hub"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/server"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// DefaultModel is what `troupe serve` runs with no -m and no $TROUPE_MODEL:
// SmolLM2-135M-Instruct, a small instruct model with a chat template,
// downloaded once into the cache.
const DefaultModel = "hf://bartowski/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q8_0.gguf"

// serveConfig is what `troupe serve` is told. Its flags write into it
// (register); the runtime, server and cluster settings go straight into
// those packages' configs, completed by serve with what only it knows.
type serveConfig struct {
	Model            string // -m: a file, a directory or hf://...; "": $TROUPE_MODEL, else DefaultModel
	HFRepo           string // -hf, --hf-repo: OWNER/REPO[:QUANT], the model as hf.co/OWNER/REPO[:QUANT] (llama-server's)
	CacheDir         string // download cache for hf:// models; "": $TROUPE_CACHE, else the user cache dir
	Host             string
	Port             int    // 0: any free port
	ChatTemplateFile string // a built-in template's name or a Jinja file, read into Server.ChatTemplate; "": the model's, else chatml
	Preemption       string // recompute or swap: Runtime.Preemption
	Device           string // auto, cpu or cuda: Runtime.NewBackend
	LogFormat        string // auto, console or json
	ShutdownGrace    time.Duration
	Repack           model.Repack        // --repack, --no-repack: which weights are repacked at load
	LoRA             []loraSpec          // --lora: adapters applied to every request
	LoRAUnapplied    bool                // --lora-init-without-apply: loaded at scale 0
	LoRAModules      []server.LoRAModule // --lora-modules: adapters served as model names (several-models mode)
	MaxLoRARank      int                 // vLLM's --max-lora-rank: larger adapters refused; 0 no bound
	DraftModel       string              // --model-draft/-md: speculative decoding's draft model
	MMProj           string              // --mmproj: the multimodal projector (images)
	NoMMProj         bool                // --no-mmproj: a hub model's (or subdirectory's) projector is not loaded

	Runtime  actors.Config  // NewBackend is set when serving
	Server   server.Config  // ModelName "": the model's file name; ChatTemplate, Cluster and Log are set when serving
	Cluster  cluster.Config // joined when Cluster.Name is set
	Pipeline pipelineConfig // --pipeline-*: the model split into stages over members (pipeline.go)
	Models   modelsConfig   // --models-dir: several models, loaded on demand (serve_models.go)
}

// register defines the serve flags on fs, writing into c. A new flag is one
// line here (and its check in Validate, if it needs one).
func (c *serveConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Model, "m", "", "model: a GGUF file, a safetensors directory, or hf://OWNER/REPO[/FILE] (default $TROUPE_MODEL, else "+DefaultModel+")")
	fs.StringVar(&c.HFRepo, "hf", "", "llama-server's -hf: OWNER/REPO[:QUANT], as -m hf.co/OWNER/REPO[:QUANT] (the GGUF chosen by quant)")
	fs.StringVar(&c.HFRepo, "hf-repo", "", "the same as -hf")
	fs.StringVar(&c.Host, "host", "127.0.0.1", "address to listen on")
	fs.IntVar(&c.Port, "port", 8080, "port to listen on (0: any free port)")
	fs.StringVar(&c.Server.APIKey, "api-key", "", "require this key as a Bearer token on /v1 routes (default $TROUPE_API_KEY)")
	fs.Var(modelNameFlag{&c.Server.ModelName, &c.Server.ModelAliases}, "served-model-name", "the model `name` clients use, or a comma list of names (default: the file or directory name)")
	fs.StringVar(&c.ChatTemplateFile, "chat-template", "", "a built-in chat template ("+strings.Join(server.BuiltinTemplateNames(), ", ")+
		") or a Jinja file or Jinja text, instead of the model's (default: the model's, else "+server.FallbackTemplate+")")
	fs.StringVar(&c.Server.ToolCallParser, "tool-call-parser", "", "the model's tool-call format (hermes, llama3_json, mistral, openai, ...; default: detected from the chat template)")
	fs.IntVar(&c.Runtime.Workers, "t", 2, "threads per device")
	fs.IntVar(&c.Runtime.Devices, "devices", 1, "device replicas")
	fs.StringVar(&c.Device, "device", "auto", "device: auto (CUDA when the model loads on a GPU, else the CPU), cpu or cuda")
	fs.IntVar(&c.Runtime.MaxNumSeqs, "max-num-seqs", 0, "sequences per step (0: 64)")
	fs.IntVar(&c.Runtime.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "tokens per step (0: 512)")
	fs.IntVar(&c.Runtime.MaxModelLen, "c", 0, "max model length: positions per sequence (0: the model's context)")
	fs.IntVar(&c.Runtime.NumBlocks, "num-kv-blocks", 0, "KV blocks per device (0: sized from the context and max-num-seqs)")
	fs.IntVar(&c.Runtime.BlockSize, "block-size", 16, "tokens per KV block")
	kvCacheTypeVar(fs, &c.Runtime.KVCacheType)
	repackVar(fs, &c.Repack)
	poolingVar(fs, &c.Runtime.Pooling)
	fs.StringVar(&c.Preemption, "preemption", "recompute", "preemption mode: recompute or swap")
	fs.IntVar(&c.Runtime.NumHostBlocks, "swap-blocks", 0, "host-tier KV blocks for swap (0: as many as num-kv-blocks)")
	fs.BoolVar(&c.Runtime.NoPrefixCaching, "no-prefix-caching", false, "turn automatic prefix caching off")
	fs.IntVar(&c.Server.MaxQueue, "max-queue", 256, "requests queued beyond those running before 429")
	fs.StringVar(&c.Cluster.Name, "cluster", "", "join the cluster of this name (with --provider and --advertise): requests are placed on its nodes")
	fs.StringVar(&c.Cluster.Provider, "provider", "automanaged", "cluster membership: etcd or automanaged")
	c.Cluster.Etcd = []string{"127.0.0.1:2379"}
	fs.Var(listFlag{&c.Cluster.Etcd}, "etcd", "etcd `endpoints`, comma-separated (--provider etcd)")
	fs.StringVar(&c.Cluster.Advertise, "advertise", "", "HOST:PORT this node listens on for the other nodes, and is reached at")
	fs.IntVar(&c.Cluster.AutoManagedPort, "automanaged-port", 0, "this node's automanaged port (--provider automanaged)")
	fs.Var(listFlag{&c.Cluster.Seeds}, "seeds", "every node's automanaged `HOST:PORT`s, comma-separated (--provider automanaged)")
	fs.StringVar(&c.Cluster.Role, "role", "", "this member's role in the cluster: prefill, decode or both (default both): long prompts of busy decode members are computed on prefill members and their K/V blocks moved")
	fs.IntVar(&c.Cluster.DisaggTokens, "disagg-tokens", 0, "prompt tokens from which a busy decode member's request is prefilled on a prefill member (0: 256)")
	fs.BoolVar(&c.Cluster.DisaggAlways, "disagg-always", false, "prefill every prompt past --disagg-tokens on a prefill member, even when its decode member is idle")
	fs.BoolVar(&c.Server.Pprof, "pprof", false, "serve Go's profiles under /debug/pprof/ (behind --api-key when set)")
	fs.BoolVar(&c.Server.NoWebUI, "no-webui", false, "turn the web page at / off (chat and the live view; GET /v1/live stays)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 30*time.Second, "on SIGINT or SIGTERM, how long requests in flight get to finish before they are cancelled")
	fs.IntVar(&c.Server.Responses.MaxResponses, "responses-max", 0, "responses /v1/responses keeps for previous_response_id (store: true); past it the oldest go (0: 1024)")
	fs.DurationVar(&c.Server.Responses.MaxAge, "responses-max-age", 0, "how long /v1/responses keeps a stored response (0: 1h)")
	fs.DurationVar(&c.Server.RequestTimeout, "request-timeout", 10*time.Minute, "cancel a generation request running longer (408); 0: no limit")
	fs.DurationVar(&c.Server.WriteStallTimeout, "write-stall-timeout", 30*time.Second, "cancel a request whose client reads none of its response for this long (each write's deadline)")
	fs.StringVar(&c.CacheDir, "cache-dir", "", "download cache for hf:// models (default $TROUPE_CACHE, else the user cache dir)")
	fs.StringVar(&c.LogFormat, "log-format", "auto", "log format: auto (console on a terminal, else json), console, json")
	fs.Var(listFlag{&c.Server.AllowedOrigins}, "allowed-origins", "browser `origins` allowed to call the API (CORS) besides the server's own and loopback ones (http://localhost:*, http://127.0.0.1:*, http://[::1]:*), comma-separated; * for any, * within one for a wildcard (https://*.example.com)")
	fs.Var(listFlag{&c.Server.AllowedHosts}, "allowed-hosts", "Host `names` answered besides localhost, IP addresses and this machine's name, comma-separated; * for any, .example.com for a domain (default: checked only when --host is loopback)")
	registerSamplingDefaults(fs, &c.Server.Defaults)
	specVar(fs, &c.Runtime.Speculative, &c.DraftModel)
	loraVar(fs, &c.LoRA)
	mmprojVar(fs, &c.MMProj)     // mmproj.go
	noMMProjVar(fs, &c.NoMMProj) // hubmmproj.go
	mediaVars(fs, &c.Server.Media)
	loraModulesVar(fs, &c.LoRAModules)
	fs.BoolVar(&c.LoRAUnapplied, "lora-init-without-apply", false, "load the --lora adapters at scale 0 (llama-server's flag): requests name them in lora, or POST /lora-adapters sets their scales")
	pipelineVar(fs, &c.Pipeline)
	c.Models.register(fs)
	registerPeerFlags(fs, c) // last: llama-server's and vLLM's names for the flags above
}

// fromEnv fills what the flags left empty from the environment: the model
// ($TROUPE_MODEL, else DefaultModel) and the API key ($TROUPE_API_KEY).
func (c *serveConfig) fromEnv(getenv func(string) string) {
	if c.Model == "" {
		if c.Model = getenv("TROUPE_MODEL"); c.Model == "" {
			c.Model = DefaultModel
		}
	}
	if c.Server.APIKey == "" {
		c.Server.APIKey = getenv("TROUPE_API_KEY")
	}
}

// Validate reports the first setting that cannot work, as a usageError
// naming its flag. It does no I/O: a missing model file or a device that
// is not there is found by serve.
func (c *serveConfig) Validate() error {
	if err := c.hfModel(); err != nil { // serveCmd's, before the environment's model: a no-op then
		return err
	}
	var msg string
	switch {
	case c.Preemption != "recompute" && c.Preemption != "swap":
		msg = fmt.Sprintf("--preemption %q: want recompute or swap", c.Preemption)
	case strings.Contains(c.Server.APIKey, ","):
		msg = "--api-key: one key, not a comma-separated list (llama-server's several keys are not supported)"
	case c.Port < 0 || c.Port > 65535:
		msg = fmt.Sprintf("--port %d is not a port", c.Port)
	case c.Runtime.Workers < 1 || c.Runtime.Devices < 1:
		msg = "-t and --devices must be at least 1"
	case c.LogFormat != "auto" && c.LogFormat != "console" && c.LogFormat != "json":
		msg = fmt.Sprintf("--log-format %q: want auto, console or json", c.LogFormat)
	case c.Device != backend.DeviceAuto && c.Device != backend.DeviceCPU && c.Device != backend.DeviceCUDA:
		msg = fmt.Sprintf("--device %q: want auto, cpu or cuda", c.Device)
	case c.ShutdownGrace < 0:
		msg = fmt.Sprintf("--shutdown-grace %v is negative", c.ShutdownGrace)
	case c.Server.Responses.MaxResponses < 0 || c.Server.Responses.MaxAge < 0:
		msg = "--responses-max and --responses-max-age must not be negative"
	case c.Server.WriteStallTimeout <= 0:
		msg = fmt.Sprintf("--write-stall-timeout %v must be positive", c.Server.WriteStallTimeout)
	case c.Server.RequestTimeout < 0:
		msg = fmt.Sprintf("--request-timeout %v is negative", c.Server.RequestTimeout)
	case c.Runtime.MaxModelLen < 0 || c.Runtime.NumBlocks < 0 || c.Runtime.MaxNumSeqs < 0 || c.Runtime.MaxNumBatchedTokens < 0 || c.Runtime.NumHostBlocks < 0:
		msg = "-c, --num-kv-blocks, --max-num-seqs, --max-num-batched-tokens and --swap-blocks must not be negative"
	case c.Runtime.BlockSize < 1:
		msg = fmt.Sprintf("--block-size %d: want at least 1", c.Runtime.BlockSize)
	case c.Runtime.MaxModelLen == 1:
		msg = "-c 1: want at least 2 positions"
	case c.Server.ToolCallParser != "":
		if _, err := toolcall.Lookup(c.Server.ToolCallParser); err != nil {
			msg = "--tool-call-parser: " + strings.TrimPrefix(err.Error(), "toolcall: ")
		}
	case c.Cluster.Name == "" && (c.Cluster.Role != "" || c.Cluster.DisaggTokens != 0 || c.Cluster.DisaggAlways):
		msg = "--role, --disagg-tokens and --disagg-always need --cluster"
	case c.Cluster.Name != "":
		if err := c.Cluster.Validate(); err != nil {
			msg = err.Error()
		}
	}
	if msg == "" {
		msg = c.checkPipeline()
	}
	if msg == "" {
		if err := checkSamplingDefaults(&c.Server.Defaults); err != nil {
			msg = err.Error()
		}
	}
	if msg == "" {
		if err := checkSpec(&c.Runtime.Speculative, c.DraftModel); err != nil {
			msg = err.Error()
		}
	}
	if msg != "" {
		return usageError{msg}
	}
	return nil
}

func serveCmd(args []string, stdout, stderr io.Writer) error {
	var c serveConfig
	fs := newFlags("serve", stderr)
	c.register(fs)
	if err := parse(fs, joinListArgs(args, serveListFlags...)); err != nil {
		return err
	}
	if err := c.hfModel(); err != nil {
		return err
	}
	c.Models.explicitM = c.Model != ""
	c.fromEnv(os.Getenv)
	if err := c.Models.fromEnv(os.Getenv, flagsSet(fs)); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if err := c.validateModels(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // after the first signal, a second kills the process the usual way
	return c.serve(ctx, stdout, stderr)
}

// hfModel makes -hf OWNER/REPO[:QUANT] the model (once: it clears
// HFRepo); with -m too it is a usage error.
func (c *serveConfig) hfModel() error {
	spec, err := hfRepoSpec(c.HFRepo)
	switch {
	case err != nil || spec == "":
		return err
	case c.Model != "":
		return usageError{"the model is given twice: give one of -m and -hf"}
	}
	c.Model, c.HFRepo = spec, ""
	return nil
}

// serve runs the server of a validated c until ctx ends, then drains it:
// new requests get 503, those in flight get c.ShutdownGrace to finish
// before they are cancelled. It listens before it loads the model, so
// clients get 503 rather than a refused connection meanwhile.
func (c *serveConfig) serve(ctx context.Context, stdout, stderr io.Writer) error {
	if c.Pipeline.Stage > 0 {
		return c.serveStage(ctx, stdout, stderr) // a pipeline's stage member: pipeline.go
	}
	if c.Models.Dir != "" || len(c.LoRAModules) > 0 {
		return c.serveModels(ctx, stdout, stderr)
	}
	s, err := c.prepare(ctx, stderr)
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
	ln, err := listen(c.Host, c.Port)
	if err != nil {
		return err
	}
	defer ln.Close() // the one Close: every return below (after Shutdown it is closed already)
	s.log.Debug().Str("model", s.local).Str("device", s.kind).Str("addr", ln.Addr().String()).Msg("loading")
	loadStart := time.Now()
	o, err := c.openModel(s)
	if err != nil {
		return err
	}
	defer o.close()
	rt, err := c.startRuntime(ctx, s, o, system)
	if err != nil {
		return err
	}
	if c.Cluster.Name != "" && o.head == nil { // a pipeline's head joined the cluster in head.start
		if node, err = cluster.Start(system, rt, c.Cluster); err != nil {
			return err
		}
		s.log.Info().Str("cluster", c.Cluster.Name).Str("provider", c.Cluster.Provider).Str("advertise", c.Cluster.Advertise).Msg("joined the cluster")
	}
	s.srvCfg.Cluster = node
	if o.head != nil {
		s.srvCfg.Pipeline = o.head.p
	}
	srv, err := server.New(system, rt, s.srvCfg)
	if err != nil {
		return err
	}
	httpSrv := srv.HTTPServer()
	wait := serveHTTP(httpSrv, ln)
	srv.Ready()
	sum := newSummary(s.srvCfg.ModelName, o.m, rt.Config(), s.kind, time.Since(loadStart), "http://"+ln.Addr().String())
	if s.console {
		sum.log(s.log.Debug()) // a person reads the line below
	} else {
		sum.log(s.log.Info())
	}
	fmt.Fprintln(stdout, sum)

	if err := wait(ctx); err != nil {
		return err
	}
	o.mapped = drain(s.log, c.ShutdownGrace, srv, httpSrv, rt)
	if node != nil {
		node.Stop() // requests other nodes ran here were cancelled by drain: they re-run elsewhere
	}
	s.log.Info().Msg("stopped")
	return nil
}

// serveSetup is what serve works out from the flags before it listens.
type serveSetup struct {
	rtCfg   actors.Config
	srvCfg  server.Config
	log     zerolog.Logger
	console bool   // log writes console lines
	kind    string // the device: backend.DeviceCPU or DeviceCUDA
	local   string // the model's local path
}

// prepare is serve's first step: the device, the logger, the model's
// local path (downloaded when hf://), its projector and the chat template.
func (c *serveConfig) prepare(ctx context.Context, stderr io.Writer) (*serveSetup, error) {
	device, err := loraDevice(c.Device, c.LoRA)
	if err != nil {
		return nil, err
	}
	s := &serveSetup{rtCfg: c.Runtime, srvCfg: c.Server}
	if s.kind, err = deviceFlag(device); err != nil {
		return nil, err
	}
	s.log, s.console = c.baseConfigs(stderr, &s.rtCfg, &s.srvCfg)
	if c.Model, err = hubModelURI(ctx, c.Model, c.CacheDir, stderr); err != nil { // hubmmproj.go: hf.co/OWNER/REPO[:QUANT] as run takes it
		return nil, err
	}
	if s.local, err = resolveModel(ctx, c.Model, c.CacheDir, stderr); err != nil { // before the template: a missing model is said as such
		return nil, err
	}
	if err := autoProjector(ctx, c.Model, c.CacheDir, &c.MMProj, c.NoMMProj, stderr); err != nil { // hubmmproj.go: after the flags' checks and the model
		return nil, err
	}
	if s.srvCfg.ChatTemplate, err = readChatTemplate(c.ChatTemplateFile); err != nil {
		return nil, err
	}
	if s.srvCfg.ModelName == "" {
		s.srvCfg.ModelName = modelName(s.local)
	}
	return s, nil
}

// baseConfigs completes the runtime and server configs with what every
// serve mode sets the same way: --preemption, the logger (returned, with
// whether it writes console lines), the version and the bound host.
func (c *serveConfig) baseConfigs(stderr io.Writer, rtCfg *actors.Config, srvCfg *server.Config) (zerolog.Logger, bool) {
	if c.Preemption == "swap" {
		rtCfg.Preemption = sched.Swap
	}
	log, console := newLogger(stderr, c.LogFormat)
	srvCfg.Log, srvCfg.Version, srvCfg.BindHost = log, buildVersion(), c.Host
	return log, console
}

// modelName is the name a model is served under by default: its file or
// directory name, less .gguf.
func modelName(local string) string {
	return strings.TrimSuffix(filepath.Base(local), ".gguf")
}

// listen opens serve's TCP listener on --host and --port.
func listen(host string, port int) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
}

// openedModel is the model serve opened, with what goes with it: a
// pipeline head's split, the adapters, the projector and the draft model.
type openedModel struct {
	m       *model.Model
	head    *pipelineHead       // the head of a pipeline (pipeline.go); nil without one
	encoder actors.ImageEncoder // the projector's, else nil
	closers []func()            // run last first by close
	mapped  bool                // false once the runtime may still read the weights
}

// close releases what openModel opened, last first; the model only while
// it is mapped.
func (o *openedModel) close() {
	for i := len(o.closers) - 1; i >= 0; i-- {
		o.closers[i]()
	}
	if o.mapped {
		o.m.Close()
	}
}

// openModel is serve's load step: the model (split for a pipeline's head),
// checked against the flags, then its adapters, projector and draft model.
// On an error, what it opened is closed.
func (c *serveConfig) openModel(s *serveSetup) (_ *openedModel, err error) {
	loadOpts := model.LoadOptions{Repack: c.Repack}
	o := &openedModel{}
	if c.Pipeline.Stages > 0 {
		if o.head, err = newPipelineHead(s.local, c.Pipeline.Stages, &loadOpts); err != nil {
			return nil, err
		}
	}
	if o.m, err = model.OpenWith(s.local, loadOpts); err != nil {
		return nil, err
	}
	o.mapped = true
	defer func() {
		if err != nil {
			o.close()
		}
	}()
	if err := c.checkModel(&o.m.Config); err != nil {
		return nil, err
	}
	closeAdapters, err := openAdapters(o.m, unapplied(c.LoRA, c.LoRAUnapplied), c.MaxLoRARank)
	if err != nil {
		return nil, err
	}
	o.closers = append(o.closers, closeAdapters)
	encoder, closeProjector, err := openProjector(c.MMProj, o.m)
	if err != nil {
		return nil, err
	}
	o.closers = append(o.closers, closeProjector)
	o.encoder, s.rtCfg.Encoder = encoder, encoder
	closeDraft, err := openDraft(&s.rtCfg.Speculative, c.DraftModel, s.kind, c.Repack)
	if err != nil {
		return nil, err
	}
	o.closers = append(o.closers, closeDraft)
	return o, nil
}

// startRuntime is serve's runtime step: the runtime on the selected
// device (or a pipeline's stages, its head started), then what the logs
// say about where it runs, and the fallback chat template.
func (c *serveConfig) startRuntime(ctx context.Context, s *serveSetup, o *openedModel, system *actor.ActorSystem) (*actors.Runtime, error) {
	devices := backend.NewSelector(o.m, s.kind)
	s.rtCfg.NewBackend = devices.New
	if o.head != nil {
		s.rtCfg.NewBackend, s.kind = o.head.backend(o.m, c.Pipeline.Stages, c.Pipeline.MicroBatches), backend.DeviceCPU
	}
	rt, err := actors.Start(system, o.m, s.rtCfg)
	if err != nil {
		return nil, err
	}
	if o.head != nil {
		o.closers = append(o.closers, o.head.p.Stop)
		if err := o.head.start(ctx, s.log, system, rt, c.Cluster); err != nil {
			rt.Stop(time.Second)
			return nil, err
		}
	}
	if err := devices.Fallback(); err != nil {
		s.kind = backend.DeviceCPU
		s.log.Info().Str("why", fallbackWhy(err)).Msg("--device auto: CUDA is not usable here; running on the CPU")
	}
	if msg := encoderPlacement(o.encoder, rt.Device()); msg != "" { // mmproj.go
		s.log.Info().Msg(msg)
	}
	if s.srvCfg.ChatTemplate == "" && rt.ChatTemplate() == "" {
		s.srvCfg.ChatTemplate, _ = server.BuiltinTemplate(server.FallbackTemplate)
		s.log.Warn().Str("chat_template", server.FallbackTemplate).
			Msg("the model has no chat template; /v1/chat/completions uses the built-in " + server.FallbackTemplate + " (choose one with --chat-template)")
	}
	return rt, nil
}

// drain stops a serving server: new requests get 503 with Retry-After
// (the listener stays open), those in flight get grace to finish; then
// the runtime stops, which cancels what still runs, and each handler
// answers its request before the HTTP server closes.
//
// It reports whether the runtime stopped: when it did not, a device may
// still be in a forward pass, and the model must stay mapped until the
// process exits.
func drain(log zerolog.Logger, grace time.Duration, srv *server.Server, httpSrv *http.Server, rt *actors.Runtime) (stopped bool) {
	stopped = true
	log.Info().Dur("grace", grace).Msg("draining")
	srv.Drain()
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if srv.WaitIdle(graceCtx) != nil {
		// Cancel what still runs: each request is answered 503 (an error
		// event, then [DONE], on a stream), never cut off silently.
		log.Warn().Int("requests", rt.NumRequests()).Msg("requests still running after the grace period; cancelling them")
		if err := rt.Stop(5 * time.Second); err != nil {
			log.Warn().Err(err).Msg("stopping the runtime")
			stopped = false
		}
	}
	closeHTTP(httpSrv)
	if err := rt.Stop(5 * time.Second); err != nil {
		log.Warn().Err(err).Msg("stopping the runtime")
		stopped = false
	}
	return stopped
}

// serveHTTP serves httpSrv on ln in the background. wait returns the
// error that ends serving early, or nil once ctx ends.
func serveHTTP(httpSrv *http.Server, ln net.Listener) (wait func(ctx context.Context) error) {
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	return func(ctx context.Context) error {
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

// closeHTTP shuts httpSrv down, giving its handlers 5s to answer the
// requests they hold, then closes it.
func closeHTTP(httpSrv *http.Server) {
	answered, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if httpSrv.Shutdown(answered) != nil {
		httpSrv.Close()
	}
}

// deviceFlag resolves --device (see backend.Resolve): a value other
// than auto, cpu or cuda is a usage error; cuda without a GPU an error that
// says why.
func deviceFlag(v string) (string, error) {
	if v != backend.DeviceAuto && v != backend.DeviceCPU && v != backend.DeviceCUDA {
		return "", usageError{fmt.Sprintf("--device %q: want auto, cpu or cuda", v)}
	}
	return backend.Resolve(v)
}

// listFlag is a comma-separated flag bound to a list.
type listFlag struct{ list *[]string }

func (f listFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f listFlag) Set(s string) error {
	*f.list = splitList(s)
	return nil
}

// splitList splits a comma-separated flag, dropping empty entries; a JSON
// array of strings (vLLM's --allowed-origins '["*"]') is read as one.
func splitList(s string) []string {
	var out []string
	if strings.HasPrefix(strings.TrimSpace(s), "[") && json.Unmarshal([]byte(s), &out) == nil {
		return slices.DeleteFunc(out, func(e string) bool { return strings.TrimSpace(e) == "" })
	}
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

// newLogger returns a zerolog logger at info level: console lines on a
// terminal, JSON otherwise (or as format says), and whether it writes
// console lines.
func newLogger(w io.Writer, format string) (zerolog.Logger, bool) {
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
	return zerolog.New(w).Level(zerolog.InfoLevel).With().Timestamp().Logger(), format == "console"
}
