package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/anthropic"
	"github.com/troupe-llm/troupe/server/chat"
	"github.com/troupe-llm/troupe/server/openai"
	"github.com/troupe-llm/troupe/server/responses"
	"github.com/troupe-llm/troupe/server/toolcall"
	"github.com/troupe-llm/troupe/server/webui"
)

// Config sets up a Server.
type Config struct {
	// ModelName is the id clients send as "model" and /v1/models lists.
	ModelName string
	// ModelAliases are further names of the same model (vLLM's
	// --served-model-name list, llama-server's --alias list): a request
	// may name any of them, and /v1/models lists them all.
	ModelAliases []string
	// APIKey, when set, is required as "Authorization: Bearer KEY" on every
	// /v1 route (as vLLM's --api-key).
	APIKey string
	// ChatTemplate overrides the model's own chat template (Jinja source).
	ChatTemplate string
	// ToolCallParser names the tool-call format of the model's output
	// (toolcall.Lookup: hermes, llama3_json, mistral, ...); "": detected
	// from the chat template.
	ToolCallParser string
	// MaxBodyBytes bounds a request body; 0: 8 MiB.
	MaxBodyBytes int64
	// MaxBodyBytesInFlight bounds the request-body bytes being read, decoded
	// and tokenized at once, all requests together (promptbound.go); a
	// request waits for its share. 0: 2 x MaxBodyBytes.
	MaxBodyBytesInFlight int64
	// MaxQueue bounds the requests admitted beyond those the runtime can
	// run at once (its MaxNumSeqs per device); past it, 429 with
	// Retry-After. 0: 256; negative: no queue at all.
	MaxQueue int
	// RequestTimeout bounds a generation request from admission to its last
	// token; past it the request is cancelled and answered 408 (an error
	// event when streaming). 0: no limit.
	RequestTimeout time.Duration
	// WriteStallTimeout bounds each write of a response (a per-write
	// deadline; streamwrite.go): a client that reads nothing for that long
	// has its request cancelled, which frees its sequences and admission
	// slot. A request thus lasts at most RequestTimeout plus one
	// WriteStallTimeout. 0: 30s.
	WriteStallTimeout time.Duration
	// MaxQueuedOutputBytes bounds the output a request holds waiting to be
	// written to its client; past it the request is cancelled (408
	// output_backlog, or an error event). 0: 4 MiB.
	MaxQueuedOutputBytes int
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout bound how long a client
	// may take to send its headers, its whole request, and how long an idle
	// connection stays open (slow clients cannot hold connections forever);
	// 0: 10s, 60s, 120s. There is no timeout on a whole response: a stream
	// may rightly run for minutes (RequestTimeout bounds it, and
	// WriteStallTimeout each write).
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// Cluster, when set, places each request on a node of the cluster
	// (this one included) instead of running it on this node's runtime.
	Cluster *cluster.Node
	// Pipeline, when set, is the runtime's device, a model split into
	// stages over members: /metrics and the live view show its stages.
	Pipeline *cluster.Pipeline
	// Pprof serves Go's profiles under /debug/pprof/ (an admin surface: off
	// by default, behind APIKey when one is set).
	Pprof bool
	// NoWebUI turns the web page at / off (GET /v1/live stays).
	NoWebUI bool
	// MaxLiveListeners bounds the GET /v1/live streams open at once; past
	// it, 429. 0: 64.
	MaxLiveListeners int
	// Log receives one line per request and the server's events.
	Log zerolog.Logger
	// Version is the build GET /version reports; it also goes into every
	// response's system_fingerprint.
	Version VersionInfo
	// AllowedOrigins are the browser origins CORS lets call the API
	// besides loopback ones, which are always allowed as on Ollama ("*":
	// any; a "*" within one is a wildcard). A request with a body from any
	// other origin must declare it JSON (hostcheck.go).
	AllowedOrigins []string
	// BindHost is the address the server listens on (serve's --host); with
	// AllowedHosts it decides which Host headers are answered (hostcheck.go:
	// newHostPolicy). "": not known, no check unless AllowedHosts is set.
	BindHost string
	// AllowedHosts are Host names answered besides localhost, IP literals
	// and this machine's name ("*": any; ".example.com": the domain and its
	// subdomains).
	AllowedHosts []string
	// Defaults are the sampling parameters of a request that does not set
	// them (serve's --temp, --top-k, ...).
	Defaults SamplingDefaults
	// Responses bounds the store of /v1/responses (how many responses, for
	// how long); zero fields take its defaults.
	Responses responses.StoreConfig
	// Media bounds requests' images (images.go).
	Media MediaConfig
}

// scriptFunc answers a request in place of the runtime (tests only).
type scriptFunc func(context.Context, *messages.GenerateRequest) (<-chan *messages.OutputChunk, error)

// Server serves the OpenAI-compatible API for one runtime.
type Server struct {
	cfg      Config
	rt       *actors.Runtime
	system   *actor.ActorSystem
	front    *actor.PID
	template *chat.Template // nil: no template
	tmplErr  error          // why template is nil
	// templateSrc is the chat template's source; toolFormat the format
	// of the model's tool calls (toolcall.None: not parsed).
	templateSrc string
	toolFormat  toolcall.Format
	// thinks: the template reasons apart from its answer (templateThinks).
	thinks bool
	// scripted, set by tests only, answers requests in place of the runtime.
	// A test sets it after the server is listening, and its client may be
	// another process, whose requests give the race detector no ordering:
	// the atomic is that ordering.
	scripted atomic.Pointer[scriptFunc]
	metrics  *metrics
	mux      *http.ServeMux
	// fingerprint is every response's system_fingerprint.
	fingerprint string
	// inFlight counts the admitted requests not yet answered (WaitIdle).
	inFlight atomic.Int64
	// budget bounds the body bytes in flight; maxTokenBytes is
	// Runtime.MaxTokenBytes (promptbound.go).
	budget        *bodyBudget
	maxTokenBytes int
	// responses serves /v1/responses and holds its store.
	responses *responses.Handler
}

// askTimeout bounds a handler's question to the front actor.
const askTimeout = 5 * time.Second

// New returns a Server over rt, in the loading state until Ready is called.
func New(system *actor.ActorSystem, rt *actors.Runtime, cfg Config) (*Server, error) {
	if cfg.ModelName == "" {
		return nil, errors.New("server: a model name is required")
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 8 << 20
	}
	if cfg.MaxBodyBytesInFlight <= 0 {
		cfg.MaxBodyBytesInFlight = 2 * cfg.MaxBodyBytes
	}
	if cfg.WriteStallTimeout <= 0 {
		cfg.WriteStallTimeout = 30 * time.Second
	}
	if cfg.MaxQueuedOutputBytes <= 0 {
		cfg.MaxQueuedOutputBytes = 4 << 20
	}
	if cfg.MaxLiveListeners <= 0 {
		cfg.MaxLiveListeners = 64
	}
	if cfg.MaxQueue == 0 {
		cfg.MaxQueue = 256
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.ReadHeaderTimeout, 10 * time.Second}, {&cfg.ReadTimeout, time.Minute}, {&cfg.IdleTimeout, 2 * time.Minute}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	s := &Server{cfg: cfg, rt: rt, system: system, mux: http.NewServeMux(), fingerprint: fingerprint(cfg.Version, cfg.ModelName),
		budget:        &bodyBudget{sem: semaphore.NewWeighted(cfg.MaxBodyBytesInFlight), size: cfg.MaxBodyBytesInFlight},
		maxTokenBytes: rt.MaxTokenBytes()}
	src := cfg.ChatTemplate
	if src == "" {
		src = rt.ChatTemplate()
	}
	if src == "" {
		s.tmplErr = chat.ErrNoTemplate
	} else if t, err := chat.Parse(src); err != nil {
		if cfg.ChatTemplate != "" {
			return nil, fmt.Errorf("server: chat template: %w", err)
		}
		s.tmplErr = fmt.Errorf("the model's chat template does not parse: %w", err)
	} else {
		s.template = t
	}
	s.templateSrc = src
	var err error
	if s.toolFormat, err = toolFormat(cfg.ToolCallParser, src); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.thinks = templateThinks(s.template, src, s.toolFormat)
	s.metrics = newMetrics(cfg.ModelName, system, rt, cfg.Cluster)
	if cfg.Pipeline != nil {
		s.metrics.reg.MustRegister(newStageCollector(cfg.ModelName, cfg.Pipeline))
	}
	limit := rt.Config().MaxNumSeqs*rt.Config().Devices + max(cfg.MaxQueue, 0)
	s.front = system.Root.SpawnPrefix(actor.PropsFromProducer(newFront(limit, cfg.MaxLiveListeners, s.liveSource())), "http-front-")
	s.routes()
	return s, nil
}

// Ready lets requests in: the model is loaded.
func (s *Server) Ready() { s.system.Root.Send(s.front, &ready{}) }

// Drain turns new requests away with 503 and Retry-After; the ones in
// flight go on (WaitIdle waits for them).
func (s *Server) Drain() { s.system.Root.Send(s.front, &drain{}) }

// WaitIdle returns once no admitted request is in flight, or with ctx's
// error when ctx ends first.
func (s *Server) WaitIdle(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for s.inFlight.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Handler is the server's HTTP handler: the route table, with every /v1
// route also served without the prefix, OPTIONS and CORS on every route,
// the Host and cross-site guards (hostcheck.go), a bound on each write
// (streamwrite.go), and one log line per request.
func (s *Server) Handler() http.Handler {
	return s.logged(s.stallBounded(s.guarded(s.unprefixed(s.cors(s.mux)))))
}

// HTTPServer is an http.Server for Handler with the Config's timeouts and
// a 64 KiB bound on request headers.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout: s.cfg.ReadTimeout, IdleTimeout: s.cfg.IdleTimeout, MaxHeaderBytes: 64 << 10}
}

func (s *Server) routes() {
	openai.New(s).Register(s.mux, openai.Middleware{Auth: s.auth, Generation: s.generation,
		Body: func(h http.HandlerFunc) http.HandlerFunc { return s.budgeted(writeError, h) }}) // server/openai
	s.mux.HandleFunc("POST /infill", s.auth(s.generation(s.admitted(s.infill)))) // infill_route.go
	s.mux.HandleFunc("GET /version", s.version)
	s.rerankRoutes() // rerank.go
	s.mux.HandleFunc("POST /tokenize", s.auth(s.admitted(s.tokenize)))
	s.mux.HandleFunc("POST /detokenize", s.auth(s.admitted(s.detokenize)))
	s.mux.HandleFunc("GET /lora-adapters", s.auth(s.loraAdapters)) // lora_routes.go
	s.mux.HandleFunc("POST /lora-adapters", s.auth(s.setLoRAAdapters))
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.Handle("GET /metrics", s.metrics.handler())
	s.ollamaRoutes() // Ollama's /api routes (ollama.go)
	anthropic.New(s).Register(s.mux)
	s.responses = responses.New(s, s.cfg.Responses)
	s.responses.Register(s.mux)
	if s.cfg.Pprof {
		s.mux.HandleFunc("GET /debug/pprof/", s.auth(pprof.Index))
		s.mux.HandleFunc("GET /debug/pprof/cmdline", s.auth(pprof.Cmdline))
		s.mux.HandleFunc("GET /debug/pprof/profile", s.auth(pprof.Profile))
		s.mux.HandleFunc("GET /debug/pprof/symbol", s.auth(pprof.Symbol))
		s.mux.HandleFunc("GET /debug/pprof/trace", s.auth(pprof.Trace))
	}
	s.mux.HandleFunc("GET /v1/live", s.auth(s.liveEvents))
	if !s.cfg.NoWebUI {
		s.mux.Handle("GET /{$}", webui.Handler())
		s.mux.Handle("GET /webui/", webui.Handler())
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, notFound("", "no route %s %s", r.Method, r.URL.Path))
	})
}

// auth checks the API key, when one is set (the /v1 and /api routes, the
// tokenizer routes and the profiles; /health, /metrics and /version are
// open, as vLLM's).
func (s *Server) auth(next http.HandlerFunc) http.HandlerFunc { return s.authAs(writeError, next) }

// errorWriter writes an error in a dialect's shape: writeError (OpenAI's),
// writeOllamaError.
type errorWriter func(http.ResponseWriter, *apiError)

// authAs is auth writing its error with write.
func (s *Server) authAs(write errorWriter, next http.HandlerFunc) http.HandlerFunc {
	if s.cfg.APIKey == "" {
		return next
	}
	want := sha256.Sum256([]byte("Bearer " + s.cfg.APIKey))
	return func(w http.ResponseWriter, r *http.Request) {
		// Compared as hashes, of equal length whatever was sent: a
		// byte compare would take less time for a header whose length
		// differs from the key's, and so tell its length.
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			write(w, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error",
				Code: strp("invalid_api_key"), Message: "missing or incorrect API key (Authorization: Bearer KEY)"})
			return
		}
		next(w, r)
	}
}

// admitted asks the front actor to let the request in (503 while loading or
// draining, 429 when the queue is full) and tells it when the request is
// done (/infill, /tokenize, /detokenize, rerank: the dialects' routes are
// admitted by Start and Embed).
func (s *Server) admitted(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if e := s.admit(); e != nil {
			writeError(w, e)
			return
		}
		defer s.release()
		r, hold := s.budget.withBodyHold(r)
		defer hold.release()
		next(w, r)
	}
}

// admit asks the front actor to let a request in; once it has, release
// must follow when the request is done.
func (s *Server) admit() *apiError {
	res, err := s.system.Root.RequestFuture(s.front, &admit{}, askTimeout).Result()
	if err != nil {
		return unavailable("the server did not answer in time")
	}
	if e := res.(*admitted).Err; e != nil {
		s.metrics.rejected(e.Status)
		return e
	}
	s.inFlight.Add(1)
	return nil
}

// release tells the front actor an admitted request is done.
func (s *Server) release() {
	s.system.Root.Send(s.front, &release{})
	s.inFlight.Add(-1)
}

// modelRequest is a request body naming the model it is for.
type modelRequest interface{ model() string }

// read decodes the body into req and checks it names the served model (or
// none); on failure it has written the error and returns false.
func (s *Server) read(w http.ResponseWriter, r *http.Request, req modelRequest) bool {
	e := s.decodeBudgeted(w, r, req)
	if e == nil {
		if name := req.model(); name != "" && !s.Serves(name) {
			e = notFound("model_not_found", "the model %q does not exist; this server serves %q", name, s.cfg.ModelName)
		}
	}
	if e != nil {
		writeError(w, e)
		return false
	}
	if f, ok := req.(sampled); ok {
		s.cfg.Defaults.fill(f.sampling())
	}
	return true
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	res, err := s.system.Root.RequestFuture(s.front, &admit{}, askTimeout).Result()
	if err != nil {
		writeError(w, unavailable("the server did not answer in time"))
		return
	}
	if e := res.(*admitted).Err; e != nil && e.Status == http.StatusServiceUnavailable {
		writeError(w, e)
		return
	}
	if res.(*admitted).Err == nil {
		s.system.Root.Send(s.front, &release{})
	}
	w.WriteHeader(http.StatusOK)
}

// userError maps an error of the runtime to the client's 400 (naming the
// field at fault, when the runtime does), a 503 once it is stopping, or a
// 500.
func userError(err error) *apiError {
	var re *actors.RequestError
	if errors.As(err, &re) {
		return badRequest(re.Param, "%s", re.Msg)
	}
	if errors.Is(err, actors.ErrInvalidRequest) {
		return badRequest("", "%s", strings.TrimPrefix(err.Error(), actors.ErrInvalidRequest.Error()+": "))
	}
	if errors.Is(err, actors.ErrStopped) {
		return unavailable("the server is shutting down")
	}
	return internal(err)
}
