package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/ollama"
	"github.com/troupe-llm/troupe/server/webui"
)

// Handler is the manager's HTTP handler: its own routes (the model lists,
// llama-server's router routes, Ollama's management routes, vLLM's
// runtime LoRA routes), and every other request forwarded to the Server of
// the model its body's model field (or ?model=) names.
func (m *Manager) Handler() http.Handler {
	return m.shell.logged(m.shell.stallBounded(m.shell.guarded(http.HandlerFunc(m.dispatch))))
}

// HTTPServer is an http.Server for Handler with the Config's timeouts.
func (m *Manager) HTTPServer() *http.Server {
	c := m.cfg.Server
	return &http.Server{Handler: m.Handler(), ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout: c.ReadTimeout, IdleTimeout: c.IdleTimeout, MaxHeaderBytes: 64 << 10}
}

func (m *Manager) routes() {
	oauth := func(h http.HandlerFunc) http.HandlerFunc { return m.shell.authAs(writeOllamaError, h) }
	m.mux.HandleFunc("GET /v1/models", m.shell.auth(m.listModels))
	m.mux.HandleFunc("GET /models", m.shell.auth(m.listModels))
	m.mux.HandleFunc("GET /v1/models/{id...}", m.shell.auth(m.modelByID))
	m.mux.HandleFunc("POST /models/load", m.shell.auth(m.loadRoute))
	m.mux.HandleFunc("POST /models/unload", m.shell.auth(m.unloadRoute))
	m.mux.HandleFunc("GET /api/tags", oauth(m.tags))
	m.mux.HandleFunc("GET /api/ps", oauth(m.ps))
	m.mux.HandleFunc("POST /api/copy", oauth(m.copyRoute))
	m.mux.HandleFunc("DELETE /api/delete", oauth(m.deleteRoute))
	m.mux.HandleFunc("POST /api/pull", oauth(m.pullRoute))
	m.mux.HandleFunc("POST /api/create", oauth(m.createRoute))
	m.mux.HandleFunc("POST /v1/load_lora_adapter", m.shell.auth(m.loadLoRARoute))
	m.mux.HandleFunc("POST /v1/unload_lora_adapter", m.shell.auth(m.unloadLoRARoute))
	m.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	metrics := newManagerMetrics(m).handler() // every loaded model's series, by model_name (models_metrics.go)
	m.mux.Handle("GET /metrics", metrics)
	m.mux.Handle("GET /v1/metrics", metrics)
	if !m.cfg.Server.NoWebUI {
		m.mux.Handle("GET /{$}", webui.Handler())
		m.mux.Handle("GET /webui/", webui.Handler())
	}
}

// dispatch serves the manager's own routes, and forwards the rest.
func (m *Manager) dispatch(w http.ResponseWriter, r *http.Request) {
	if _, pattern := m.mux.Handler(r); pattern != "" {
		m.shell.cors(m.mux).ServeHTTP(w, r)
		return
	}
	write := dialectWriter(r.URL.Path)
	m.shell.authAs(write, m.shell.budgeted(write, m.forward))(w, r)
}

// dialectWriter writes errors in the shape of the API r's path belongs to.
func dialectWriter(path string) errorWriter {
	switch {
	case strings.HasPrefix(path, "/api/"):
		return writeOllamaError
	case strings.HasPrefix(path, "/v1/messages") || strings.HasPrefix(path, "/messages"):
		return writeAnthropicError
	}
	return writeError
}

// writeAnthropicError writes e in Anthropic's error shape.
func writeAnthropicError(w http.ResponseWriter, e *apiError) {
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
		409: "invalid_request_error", 413: "request_too_large", 503: "overloaded_error"}[e.Status]
	if typ == "" {
		typ = "api_error"
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": e.Message}})
}

// forward hands r to its model's Server: the model named by the body's
// model (or name) field, else ?model=, else the one model served, else the
// one used last.
func (m *Manager) forward(w http.ResponseWriter, r *http.Request) {
	write := dialectWriter(r.URL.Path)
	name := r.URL.Query().Get("model")
	var keep *time.Duration
	var peek map[string]json.RawMessage
	if r.Body != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.cfg.Server.MaxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				write(w, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
					Message: fmt.Sprintf("the request body is over %d bytes", m.cfg.Server.MaxBodyBytes)})
			} else {
				write(w, badRequest("", "reading the request body: %v", err))
			}
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if json.Unmarshal(body, &peek) == nil { // a body that does not decode is the model's server's to refuse
			for _, field := range []string{"model", "name"} {
				if raw, ok := peek[field]; ok && name == "" {
					if json.Unmarshal(raw, &name) != nil {
						write(w, badRequest(field, "%s: want a string", field))
						return
					}
				}
			}
			if raw, ok := peek["keep_alive"]; ok && string(raw) != "null" {
				d, err := parseKeepAlive(raw)
				if err != nil {
					write(w, badRequest("keep_alive", "keep_alive: %v", err))
					return
				}
				keep = &d
			}
		}
	}
	if name == "" {
		if name = m.defaultModel(r.Method == http.MethodGet || r.Method == http.MethodHead); name == "" {
			write(w, badRequest("model", "model is required: this server serves %s", quoteList(m.names())))
			return
		}
	}
	if keep != nil && *keep == 0 && ollamaEmpty(r.URL.Path, peek) {
		m.ollamaUnload(w, r.URL.Path, name)
		return
	}
	in, refs, e := m.acquire(r.Context(), name, !m.cfg.NoAutoload)
	if e != nil {
		write(w, e)
		return
	}
	defer m.release(in, keep)
	if refs != nil {
		r = r.WithContext(context.WithValue(r.Context(), loraKey{}, refs))
	}
	in.srv.unprefixed(in.srv.cors(in.srv.mux)).ServeHTTP(w, r)
}

// ollamaEmpty reports an Ollama generate without a prompt or a chat
// without messages: with keep_alive 0, Ollama's way to unload a model
// (ollama stop).
func ollamaEmpty(path string, body map[string]json.RawMessage) bool {
	field := map[string]string{"/api/generate": "prompt", "/api/chat": "messages"}[path]
	if field == "" {
		return false
	}
	switch v := strings.TrimSpace(string(body[field])); v {
	case "", "null", `""`, "[]":
		return true
	}
	return false
}

// ollamaUnload answers Ollama's unload request (keep_alive 0, no prompt):
// the model unloads now when idle, else once its requests are done; one
// not loaded is not loaded to be unloaded. done_reason "unload", as
// Ollama's.
func (m *Manager) ollamaUnload(w http.ResponseWriter, path, name string) {
	m.mu.Lock()
	r, ok, err := m.resolve(name)
	if err != nil || !ok {
		m.mu.Unlock()
		if err != nil {
			writeOllamaError(w, internal(err))
		} else {
			writeOllamaError(w, notFound("model_not_found", "model '%s' not found", name))
		}
		return
	}
	in := m.loaded[r.entry.Name]
	switch {
	case in != nil && in.busy > 0:
		in.keep = 0 // unloaded when its last request ends (release)
		in = nil
	case in != nil:
		m.removeLocked(in)
	}
	m.mu.Unlock()
	if in != nil {
		<-in.ready
		m.stop(in)
	}
	out := map[string]any{"model": name, "created_at": m.cfg.Now().UTC(), "done": true, "done_reason": "unload"}
	if path == "/api/chat" {
		out["message"] = map[string]string{"role": "assistant", "content": ""}
	} else {
		out["response"] = ""
	}
	writeJSON(w, http.StatusOK, out)
}

// loraKey carries the adapters a request's model name selects (a runtime
// adapter's name) to launch.
type loraKey struct{}

// contextLoRA is the adapter set ctx carries (nil: none).
func contextLoRA(ctx context.Context) []messages.LoRARef {
	refs, _ := ctx.Value(loraKey{}).([]messages.LoRARef)
	return refs
}

// defaultModel is the model of a request that names none: the only one,
// else, for a GET (the web page's live view, /metrics), the one used last
// ("": none).
func (m *Manager) defaultModel(recent bool) string {
	entries, err := m.entries()
	if err == nil && len(entries) == 1 {
		for n := range entries {
			return n
		}
	}
	if !recent {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *instance
	for _, in := range m.loaded {
		if best == nil || in.used.After(best.used) {
			best = in
		}
	}
	if best == nil {
		return ""
	}
	return best.name
}

// parseKeepAlive reads Ollama's keep_alive: a number of seconds or a
// duration string ("5m", "1h"); negative: forever.
func parseKeepAlive(raw json.RawMessage) (time.Duration, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, err
	}
	var d time.Duration
	switch v := v.(type) {
	case float64:
		d = time.Duration(v * float64(time.Second))
	case string:
		if secs, err := strconv.ParseFloat(v, 64); err == nil {
			d = time.Duration(secs * float64(time.Second))
		} else if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("%q is neither a number of seconds nor a duration such as \"5m\"", v)
		}
	default:
		return 0, errors.New("want a number of seconds or a duration string")
	}
	if d < 0 {
		d = -1
	}
	return d, nil
}

// modelStatus is "loaded", "loading" or "unloaded".
func (m *Manager) modelStatus(name string) string {
	in := m.loaded[name]
	switch {
	case in == nil:
		return "unloaded"
	case in.srv == nil:
		return "loading"
	}
	return "loaded"
}

// listModels serves GET /v1/models and llama-server's GET /models: every
// model, loaded or not, with its status; runtime adapters with their
// parent, as vLLM lists them.
func (m *Manager) listModels(w http.ResponseWriter, r *http.Request) {
	m.withEntries(w, writeError, func(entries map[string]*modelEntry) {
		data := []map[string]any{}
		for _, name := range sortedKeys(entries) {
			data = append(data, m.modelObject(entries, name))
		}
		for _, name := range sortedKeys(m.adapters) {
			a := m.adapters[name]
			data = append(data, map[string]any{"id": name, "object": "model", "created": 0, "owned_by": "troupe",
				"root": a.Path, "parent": a.Base, "status": map[string]string{"value": m.modelStatus(a.Base)}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	})
}

// withEntries calls fn with the models' entries, under m.mu; when they
// cannot be read it writes the error with write instead.
func (m *Manager) withEntries(w http.ResponseWriter, write func(http.ResponseWriter, *apiError), fn func(entries map[string]*modelEntry)) {
	entries, err := m.entries()
	if err != nil {
		write(w, internal(err))
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fn(entries)
}

// modelObject is entries[name] as /v1/models lists it.
func (m *Manager) modelObject(entries map[string]*modelEntry, name string) map[string]any {
	e := entries[name]
	base := name
	if e.Alias != "" {
		base = e.Alias
	}
	o := map[string]any{"id": name, "object": "model", "created": e.Modified.Unix(), "owned_by": "troupe",
		"status": map[string]string{"value": m.modelStatus(base)}}
	if e.Alias != "" {
		o["parent"] = e.Alias
	}
	if in := m.loaded[base]; in != nil && in.rt != nil {
		o["max_model_len"] = in.rt.MaxModelLen()
	}
	if b := entries[base]; b != nil && b.Projector != "" && !m.cfg.NoProjectors { // a projector: images are taken, as a served model's /v1/models says
		o["capabilities"] = []string{"completion", "vision"}
	}
	return o
}

// modelByID serves GET /v1/models/{id}.
func (m *Manager) modelByID(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	m.withEntries(w, writeError, func(entries map[string]*modelEntry) {
		if _, ok := entries[canonical(id)]; !ok {
			writeError(w, notFound("model_not_found", "the model %q does not exist; this server serves %s", id, quoteList(m.names())))
			return
		}
		writeJSON(w, http.StatusOK, m.modelObject(entries, canonical(id)))
	})
}

// modelBody is the body of the routes that name one model.
type modelBody struct {
	Model string `json:"model"`
	Name  string `json:"name"` // Ollama's older field
}

func (b *modelBody) model() string {
	if b.Model != "" {
		return b.Model
	}
	return b.Name
}

// decode reads r's JSON body into v, unknown fields refused; on failure
// it has written the error with write.
func (m *Manager) decode(w http.ResponseWriter, r *http.Request, v any, write errorWriter) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, m.cfg.Server.MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			write(w, badRequest(strings.Trim(f, `"`), "unknown field %s", f))
			return false
		}
		write(w, badRequest("", "the body is not the JSON this route takes: %s", msg))
		return false
	}
	return true
}

// routerModel reads the body of llama-server's /models/load and
// /models/unload: the model it names. On failure it has written the error.
func (m *Manager) routerModel(w http.ResponseWriter, r *http.Request) (string, bool) {
	var b modelBody
	if !m.decode(w, r, &b, writeError) {
		return "", false
	}
	if b.model() == "" {
		writeError(w, badRequest("model", "model is required"))
		return "", false
	}
	return b.model(), true
}

// loadRoute serves llama-server's POST /models/load {"model"}.
func (m *Manager) loadRoute(w http.ResponseWriter, r *http.Request) {
	name, ok := m.routerModel(w, r)
	if !ok {
		return
	}
	in, _, e := m.acquire(r.Context(), name, true)
	if e != nil {
		writeError(w, e)
		return
	}
	m.release(in, nil)
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}

// unloadRoute serves llama-server's POST /models/unload {"model"}.
func (m *Manager) unloadRoute(w http.ResponseWriter, r *http.Request) {
	name, ok := m.routerModel(w, r)
	if !ok {
		return
	}
	if e := m.unload(name); e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}

// fileSize is the size of path (0 when it cannot be read).
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// digest is an entry's identity for Ollama's lists: a hash of its file,
// size, time and Modelfile settings (the files are not read).
func digest(e *modelEntry) string {
	b, _ := json.Marshal(e)
	h := sha256.Sum256(append([]byte(fmt.Sprintf("%s\x00%d\x00", e.Path, fileSize(e.Path))), b...))
	return hex.EncodeToString(h[:])
}

// ollamaSummary is an entry as /api/tags lists it.
func ollamaSummary(entries map[string]*modelEntry, e *modelEntry) map[string]any {
	file, parent := e, ""
	if e.Alias != "" {
		parent = e.Alias
		if t := entries[e.Alias]; t != nil {
			file = t
		}
	}
	name := ollama.Name(e.Name)
	return map[string]any{"name": name, "model": name, "modified_at": e.Modified, "size": fileSize(file.Path),
		"digest": digest(file), "details": ollama.Details{ParentModel: parent, Format: "gguf", Families: []string{}}}
}

// tags serves Ollama's GET /api/tags: every model.
func (m *Manager) tags(w http.ResponseWriter, r *http.Request) {
	entries, err := m.entries()
	if err != nil {
		writeOllamaError(w, internal(err))
		return
	}
	out := []any{}
	for _, name := range sortedKeys(entries) {
		out = append(out, ollamaSummary(entries, entries[name]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
}

// ps serves Ollama's GET /api/ps: the loaded models and when each
// unloads.
func (m *Manager) ps(w http.ResponseWriter, r *http.Request) {
	m.withEntries(w, writeOllamaError, func(entries map[string]*modelEntry) {
		out := []any{}
		for _, name := range sortedKeys(m.loaded) {
			in, e := m.loaded[name], entries[name]
			if in.srv == nil || e == nil {
				continue // loading, or deleted while loaded
			}
			p := ollamaSummary(entries, e)
			delete(p, "modified_at")
			exp := m.expires(in)
			switch {
			case in.keep < 0:
				exp = forever
			case exp.IsZero(): // busy: its keep-alive starts when its requests end
				exp = m.cfg.Now().Add(in.keep)
			}
			p["expires_at"] = exp
			if in.size.Total() > 0 { // its memory as the budget counts it: the file, the KV pool, the adapters
				p["size"] = in.size.Total()
			}
			vram := int64(0)
			if in.rt.Device() == "cuda" {
				vram = p["size"].(int64)
			}
			p["size_vram"] = vram
			p["context_length"] = in.rt.MaxModelLen()
			out = append(out, p)
		}
		writeJSON(w, http.StatusOK, map[string]any{"models": out})
	})
}

// forever is the expires_at of a model kept loaded (keep_alive < 0).
var forever = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// sortedKeys are map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
