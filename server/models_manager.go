package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
)

// ManagerConfig sets up a Manager: several models in one server, each
// loaded on its first request and unloaded after its keep-alive, as
// Ollama and llama-server's router mode do.
type ManagerConfig struct {
	// Server is every model's server configuration; ModelName and
	// ModelAliases are set per model (its name, its copies and adapters),
	// ChatTemplate and Defaults by a created model's Modelfile.
	Server Config
	// Models are models given by name (serve's -m NAME=PATH): always
	// listed, never deleted.
	Models []ModelSource
	// Dir holds GGUF files, each a model named after its file (serve's
	// --models-dir), and the index of created, copied and pulled models
	// (IndexFile). "": no directory (no create, copy, delete, pull).
	Dir string
	// MaxLoaded bounds the models loaded at once (--max-loaded-models,
	// llama-server's --models-max): loading another unloads the least
	// recently used idle one. 0: 4, as llama-server's.
	MaxLoaded int
	// MaxBytes bounds the memory of the models loaded at once
	// (--models-memory), each model's as Size measures it: loading one
	// unloads least recently used idle models until it fits; a model that
	// alone needs more is refused (400), and at NewManager a model given
	// by name that does (or a budget no model fits) is ErrOverBudget.
	// 0: no bound in bytes.
	MaxBytes int64
	// MaxQueue bounds the requests that wait, first come first served,
	// for a model to load while every model in its way is busy
	// (--models-queue, Ollama's OLLAMA_MAX_QUEUE): a request past it is a
	// 503 with Retry-After. 0: no queue, such a request is a 503 at once
	// (serve's default is 512, Ollama's).
	MaxQueue int
	// Size measures what loading spec will take (its file, KV pool and
	// adapters) without loading it; required with MaxBytes. nil: every
	// model counts 0 bytes (/api/ps reports its file's size).
	Size func(spec LoadSpec) (ModelSize, error)
	// KeepAlive is how long a model stays loaded after its last request
	// when the request sets no keep_alive (--keep-alive, Ollama's
	// OLLAMA_KEEP_ALIVE): 0 unloads it at once, negative never.
	KeepAlive time.Duration
	// NoAutoload: a request for a model not loaded is refused (400) until
	// POST /models/load loads it (llama-server's --no-models-autoload).
	NoAutoload bool
	// LoRAModules are adapters served as model names from the start
	// (vLLM's --lora-modules), as /v1/load_lora_adapter makes them.
	LoRAModules []LoRAModule
	// RuntimeLoRA enables vLLM's /v1/load_lora_adapter and
	// /v1/unload_lora_adapter (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING).
	RuntimeLoRA bool
	// Load opens a model and starts its runtime on system; close releases
	// what the runtime read (called after the runtime stopped).
	Load func(ctx context.Context, system *actor.ActorSystem, spec LoadSpec) (rt *actors.Runtime, close func(), err error)
	// Pull fetches hf://OWNER/REPO/FILE.gguf from the hub (serve passes
	// hub.Download's) and returns its local path, calling progress (never
	// nil) with the bytes it has and the file's size (-1: unknown) while it
	// downloads (hub.Options.OnProgress); nil: /api/pull is a 501.
	Pull func(ctx context.Context, uri string, progress func(completed, total int64)) (string, error)
	// ListRepo lists the files of hf://OWNER/REPO[@REVISION]
	// (hub.ListFiles), for names without a file, hf.co/OWNER/REPO[:QUANT];
	// nil: those are a 400.
	ListRepo func(ctx context.Context, uri string) ([]string, error)
	// NoProjectors: models load without their projectors (serve's
	// --no-mmproj): text only, images refused as a text model's are.
	NoProjectors bool
	// Now is the clock of the keep-alives; nil: time.Now. Tests inject one.
	Now func() time.Time
}

// ModelSource is a model given by name and path, with its projector
// (mmproj GGUF; "": text only).
type ModelSource struct{ Name, Path, Projector string }

// LoRAModule is an adapter served as a model name: requests naming Name
// run the model Base ("": the one model served) with the adapter at Path
// at scale 1.
type LoRAModule struct{ Name, Path, Base string }

// LoadSpec is what Load opens: a GGUF and its adapters.
type LoadSpec struct {
	Name string
	Path string
	// Adapters are LoRA adapter files, loaded at their scales; the
	// runtime's adapter ids index this list.
	Adapters []AdapterSpec
	// MaxModelLen, when not 0, bounds the context (a Modelfile's num_ctx).
	MaxModelLen int
	// Projector, when not "", is the model's multimodal projector (an
	// mmproj GGUF): Load opens it, so requests may carry images.
	Projector string
}

// AdapterSpec is one LoRA adapter file and the scale a request that names
// none runs it at.
type AdapterSpec struct {
	Path  string
	Scale float32
}

// IndexFile is the file in ManagerConfig.Dir that lists the models made by
// /api/create, /api/copy and /api/pull.
const IndexFile = "troupe-models.json"

// modelEntry is one model the manager can load.
type modelEntry struct {
	Name string `json:"-"`
	// Path is the GGUF file; Alias, for a copy, the model it names.
	Path  string `json:"path,omitempty"`
	Alias string `json:"alias,omitempty"`
	// Projector is the model's mmproj GGUF ("": text only): a
	// subdirectory's mmproj*.gguf, or the one /api/pull fetched.
	Projector string `json:"projector,omitempty"`
	// Template (a Jinja chat template), Adapters (applied to every
	// request), Defaults and NumCtx come from a Modelfile.
	Template string           `json:"template,omitempty"`
	System   string           `json:"system,omitempty"` // the system message of a chat that sends none
	Adapters []string         `json:"adapters,omitempty"`
	Defaults SamplingDefaults `json:"parameters"`
	NumCtx   int              `json:"num_ctx,omitempty"`
	Modified time.Time        `json:"modified_at"`
	// source: "flag" (ManagerConfig.Models), "dir" (a file in Dir),
	// "index" (IndexFile).
	source string
}

// runtimeAdapter is an adapter loaded by /v1/load_lora_adapter: a model
// name that runs its base model with it.
type runtimeAdapter struct{ Name, Base, Path string }

// instance is a loaded (or loading) model.
type instance struct {
	name  string // the entry's name
	srv   *Server
	rt    *actors.Runtime
	close func()
	// ready is closed once the load is done; err says whether it failed.
	ready chan struct{}
	err   error
	// busy counts the requests holding it (a loading model is held by
	// the requests waiting for it): never unloaded while busy > 0.
	busy int
	used time.Time     // when the last request ended
	keep time.Duration // keep-alive after it: < 0 forever
	// adapters are the runtime adapters it was loaded with (names, in id
	// order after the entry's own); stale once that set changed: it takes
	// no new requests and is unloaded when idle.
	adapters []string
	own      int // the entry's own adapters (ids 0..own-1)
	stale    bool
	size     ModelSize // what the budget counts for it (measured before it loaded)
}

// Manager serves several models from one HTTP server: it routes each
// request by its model field to that model's Server, loading the model on
// demand and unloading idle ones (models_routes.go has its routes).
type Manager struct {
	cfg    ManagerConfig
	system *actor.ActorSystem
	shell  *Server // the guards, CORS and logging of the manager's own routes
	mux    *http.ServeMux

	mu       sync.Mutex
	loaded   map[string]*instance
	retiring []*instance // stale instances still busy
	adapters map[string]runtimeAdapter
	indexMu  sync.Mutex // serializes the index file's read-modify-write
	// sizes caches the Size function's answers by specKey; freeing is the
	// memory of models being unloaded (models_budget.go).
	sizes   map[string]ModelSize
	freeing int64
	// queue are the requests waiting for their model to load, in order
	// (models_queue.go); draining: Drain or Close turned them away.
	queue    []*waiter
	draining bool

	stopSweep chan struct{}
	sweepDone chan struct{}
}

// NewManager returns a Manager; Close unloads every model.
func NewManager(system *actor.ActorSystem, cfg ManagerConfig) (*Manager, error) {
	if cfg.Load == nil {
		return nil, errors.New("server: ManagerConfig.Load is required")
	}
	if cfg.MaxLoaded == 0 {
		cfg.MaxLoaded = 4
	}
	if cfg.MaxLoaded < 0 {
		return nil, fmt.Errorf("server: --max-loaded-models %d must be at least 1", cfg.MaxLoaded)
	}
	if cfg.MaxQueue < 0 {
		return nil, fmt.Errorf("server: --models-queue %d must not be negative", cfg.MaxQueue)
	}
	if cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("server: --models-memory %d must not be negative", cfg.MaxBytes)
	}
	if cfg.MaxBytes > 0 && cfg.Size == nil {
		return nil, errors.New("server: ManagerConfig.Size is required with MaxBytes")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Server.MaxBodyBytes == 0 {
		cfg.Server.MaxBodyBytes = 8 << 20
	}
	if cfg.Server.WriteStallTimeout <= 0 {
		cfg.Server.WriteStallTimeout = 30 * time.Second
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.Server.ReadHeaderTimeout, 10 * time.Second}, {&cfg.Server.ReadTimeout, time.Minute}, {&cfg.Server.IdleTimeout, 2 * time.Minute}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	seen := map[string]bool{}
	for _, s := range cfg.Models {
		if s.Name == "" || s.Path == "" {
			return nil, fmt.Errorf("server: model %q: want NAME=PATH", s.Name+"="+s.Path)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("server: model %q given twice", s.Name)
		}
		seen[s.Name] = true
	}
	if cfg.Dir != "" {
		if st, err := os.Stat(cfg.Dir); err != nil {
			return nil, fmt.Errorf("server: --models-dir: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("server: --models-dir %s is not a directory", cfg.Dir)
		}
	}
	m := &Manager{cfg: cfg, system: system, loaded: map[string]*instance{}, adapters: map[string]runtimeAdapter{},
		sizes: map[string]ModelSize{}, mux: http.NewServeMux(), stopSweep: make(chan struct{}), sweepDone: make(chan struct{})}
	inFlight := cfg.Server.MaxBodyBytesInFlight
	if inFlight <= 0 {
		inFlight = 2 * cfg.Server.MaxBodyBytes // as New does
	}
	// The shell's body budget bounds the bodies the manager buffers to read
	// their model name (forward), as a served model's own budget does.
	m.shell = &Server{cfg: cfg.Server, mux: m.mux, budget: &bodyBudget{sem: semaphore.NewWeighted(inFlight), size: inFlight}}
	entries, err := m.entries()
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, errors.New("server: no models: give -m NAME=PATH or a --models-dir with GGUF files")
	}
	for _, lm := range cfg.LoRAModules {
		if err := m.addModule(entries, lm); err != nil {
			return nil, err
		}
	}
	if err := m.checkBudget(entries); err != nil {
		return nil, err
	}
	m.routes()
	return m, nil
}

// addModule registers a --lora-modules adapter as a model name.
func (m *Manager) addModule(entries map[string]*modelEntry, lm LoRAModule) error {
	base := lm.Base
	if base == "" {
		if len(entries) != 1 {
			return fmt.Errorf("server: --lora-modules %s: name its base model (base_model_name): this server serves %s", lm.Name, quoteList(sortedKeys(entries)))
		}
		base = sortedKeys(entries)[0]
	}
	e, ok := entries[canonical(base)]
	switch {
	case !ok || e.Alias != "":
		return fmt.Errorf("server: --lora-modules %s: the base model %q is not served", lm.Name, base)
	case lm.Name == "" || lm.Path == "":
		return fmt.Errorf("server: --lora-modules %q: want NAME=PATH", lm.Name+"="+lm.Path)
	}
	if _, taken := entries[canonical(lm.Name)]; taken {
		return fmt.Errorf("server: --lora-modules %s: a model of that name is served already", lm.Name)
	}
	if _, taken := m.adapters[lm.Name]; taken {
		return fmt.Errorf("server: --lora-modules %s: given twice", lm.Name)
	}
	if _, err := os.Stat(lm.Path); err != nil {
		return fmt.Errorf("server: --lora-modules %s: %w", lm.Name, err)
	}
	m.adapters[lm.Name] = runtimeAdapter{Name: lm.Name, Base: e.Name, Path: lm.Path}
	return nil
}

// Preload loads the model name names now (serve loads its one model, with
// its --lora-modules, at start); an error is the load's.
func (m *Manager) Preload(ctx context.Context, name string) error {
	in, _, e := m.acquire(ctx, name, true)
	if e != nil {
		return errors.New(e.Message)
	}
	m.release(in, nil)
	return nil
}

// Start runs the keep-alive sweep every interval (the production clock);
// tests call Sweep instead.
func (m *Manager) Start(interval time.Duration) {
	go func() {
		defer close(m.sweepDone)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-m.stopSweep:
				return
			case <-t.C:
				m.Sweep()
			}
		}
	}()
}

// Close stops the sweep and unloads every model, waiting up to grace for
// the requests in flight.
func (m *Manager) Close() {
	select {
	case <-m.stopSweep:
	default:
		close(m.stopSweep)
	}
	m.mu.Lock()
	m.drainQueueLocked()
	var all []*instance
	for _, in := range m.loaded {
		all = append(all, in)
	}
	all = append(all, m.retiring...)
	for _, in := range all {
		m.removeLocked(in)
	}
	m.mu.Unlock()
	for _, in := range all {
		<-in.ready
		m.stop(in)
	}
}

// Drain turns new requests away with 503 on every loaded model, and the
// requests queued for a model to load (and any that would queue).
func (m *Manager) Drain() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drainQueueLocked()
	for _, in := range m.loaded {
		if in.srv != nil {
			in.srv.Drain()
		}
	}
}

// WaitIdle returns once no request holds a model, or with ctx's error.
func (m *Manager) WaitIdle(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		m.mu.Lock()
		busy := 0
		for _, in := range m.loaded {
			busy += in.busy
		}
		for _, in := range m.retiring {
			busy += in.busy
		}
		m.mu.Unlock()
		if busy == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// entries lists every model: the named ones, the GGUF files of Dir, the
// index's; a name given twice keeps its first.
func (m *Manager) entries() (map[string]*modelEntry, error) {
	out := map[string]*modelEntry{}
	for _, s := range m.cfg.Models {
		e := &modelEntry{Name: s.Name, Path: s.Path, Projector: s.Projector, source: "flag"}
		if st, err := os.Stat(s.Path); err == nil {
			e.Modified = st.ModTime()
		}
		out[s.Name] = e
	}
	if m.cfg.Dir == "" {
		return out, nil
	}
	files, err := os.ReadDir(m.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("server: --models-dir: %w", err)
	}
	for _, f := range files {
		if f.IsDir() {
			if e := subdirEntry(m.cfg.Dir, f.Name()); e != nil {
				if _, ok := out[e.Name]; !ok {
					out[e.Name] = e
				}
			}
			continue
		}
		if !strings.HasSuffix(f.Name(), ".gguf") {
			continue
		}
		name := strings.TrimSuffix(f.Name(), ".gguf")
		if _, ok := out[name]; ok {
			continue
		}
		e := &modelEntry{Name: name, Path: filepath.Join(m.cfg.Dir, f.Name()), source: "dir"}
		if info, err := f.Info(); err == nil {
			e.Modified = info.ModTime()
		}
		out[name] = e
	}
	index, err := m.readIndex()
	if err != nil {
		return nil, err
	}
	for name, e := range index {
		if _, ok := out[name]; !ok {
			e.Name, e.source = name, "index"
			out[name] = e
		}
	}
	return out, nil
}

// subdirEntry is llama-server's router layout: a subdirectory of Dir
// holding one model GGUF, and optionally its projector (a GGUF whose name
// contains "mmproj"; several: the F16 one, else the first by name), is one
// model named after the subdirectory; nil when sub holds no model GGUF, or
// several (which one is meant is not said).
func subdirEntry(dir, sub string) *modelEntry {
	files, err := os.ReadDir(filepath.Join(dir, sub))
	if err != nil {
		return nil
	}
	var names []string
	for _, f := range files {
		if !f.IsDir() {
			names = append(names, f.Name())
		}
	}
	models, projectors := ggufFiles(names)
	if len(models) != 1 || models[0].parts > 1 {
		return nil
	}
	e := &modelEntry{Name: sub, Path: filepath.Join(dir, sub, models[0].name), source: "subdir"}
	if p := chooseProjector(projectors); p != "" {
		e.Projector = filepath.Join(dir, sub, p)
	}
	if st, err := os.Stat(e.Path); err == nil {
		e.Modified = st.ModTime()
	}
	return e
}

// readIndex reads IndexFile (none: empty).
func (m *Manager) readIndex() (map[string]*modelEntry, error) {
	b, err := os.ReadFile(filepath.Join(m.cfg.Dir, IndexFile))
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*modelEntry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	var index struct {
		Models map[string]*modelEntry `json:"models"`
	}
	if err := json.Unmarshal(b, &index); err != nil {
		return nil, fmt.Errorf("server: %s: %w", filepath.Join(m.cfg.Dir, IndexFile), err)
	}
	if index.Models == nil {
		index.Models = map[string]*modelEntry{}
	}
	return index.Models, nil
}

// updateIndex applies f to the index and writes it back (atomically).
func (m *Manager) updateIndex(f func(map[string]*modelEntry) error) error {
	m.indexMu.Lock()
	defer m.indexMu.Unlock()
	index, err := m.readIndex()
	if err != nil {
		return err
	}
	if err := f(index); err != nil {
		return err
	}
	b, err := json.MarshalIndent(map[string]any{"models": index}, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(m.cfg.Dir, IndexFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// canonical is name without Ollama's ":latest" tag.
func canonical(name string) string { return strings.TrimSuffix(name, ":latest") }

// resolved is a request's model: the entry to load and the adapter the
// name selects ("" none).
type resolved struct {
	entry   *modelEntry
	adapter string
	aliases []string // the entry's other names: its copies, its adapters
}

// resolve finds name among the entries (a copy resolves to the model it
// names; an adapter to its base).
func (m *Manager) resolve(name string) (resolved, bool, error) {
	entries, err := m.entries()
	if err != nil {
		return resolved{}, false, err
	}
	name = canonical(name)
	var r resolved
	if a, ok := m.adapters[name]; ok {
		r.adapter = a.Name
		name = a.Base
	}
	e, ok := entries[name]
	if !ok {
		return r, false, nil
	}
	if e.Alias != "" {
		if e, ok = entries[e.Alias]; !ok || e.Alias != "" {
			return r, false, nil
		}
	}
	r.entry = e
	for _, o := range entries {
		if o.Alias == e.Name {
			r.aliases = append(r.aliases, o.Name)
		}
	}
	for _, a := range m.adapters {
		if a.Base == e.Name {
			r.aliases = append(r.aliases, a.Name)
		}
	}
	sort.Strings(r.aliases)
	return r, true, nil
}

// names lists every model name, sorted (for a 404's message).
func (m *Manager) names() []string {
	entries, _ := m.entries()
	var out []string
	for n := range entries {
		out = append(out, n)
	}
	for n := range m.adapters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// adapterNames are base's runtime adapters in id order.
func (m *Manager) adapterNames(base string) []string {
	var out []string
	for _, a := range m.adapters {
		if a.Base == base {
			out = append(out, a.Name)
		}
	}
	sort.Strings(out)
	return out
}

// quoteList is names quoted and comma-separated.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
