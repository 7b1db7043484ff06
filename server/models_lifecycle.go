package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/messages"
)

// A model's life in the manager: acquire holds it for a request (loading
// it, after the evictions that make room, when it is not loaded), release
// lets go of it (unloading it when its keep-alive is 0), Sweep unloads the
// idle ones whose keep-alive has passed, stop unloads one.

// errNotLoaded is acquire's answer under NoAutoload.
var errNotLoaded = errors.New("not loaded")

// specOf is what loading e opens: its file, its own adapters at scale 1,
// then the runtime adapters (names, at scale 0 until a request names one).
func (m *Manager) specOf(e *modelEntry, adapters []string) LoadSpec {
	spec := LoadSpec{Name: e.Name, Path: e.Path, MaxModelLen: e.NumCtx, Projector: e.Projector}
	if m.cfg.NoProjectors {
		spec.Projector = ""
	}
	for _, p := range e.Adapters {
		spec.Adapters = append(spec.Adapters, AdapterSpec{Path: p, Scale: 1})
	}
	for _, a := range adapters {
		spec.Adapters = append(spec.Adapters, AdapterSpec{Path: m.adapters[a].Path, Scale: 0})
	}
	return spec
}

// acquire holds the model name names (loading it when it is not loaded),
// waiting for its load until ctx ends; release must follow. The returned
// refs select the named adapter (nil: the model's defaults).
func (m *Manager) acquire(ctx context.Context, name string, autoload bool) (*instance, []messages.LoRARef, *apiError) {
	var (
		in *instance
		r  resolved
		w  *waiter // its place in the queue while it waits (models_queue.go)
	)
	defer func() {
		if w != nil {
			m.leave(w)
		}
	}()
	for {
		var measure *LoadSpec
		var e *apiError
		in, r, measure, w, e = m.hold(name, autoload, w)
		if e != nil {
			return nil, nil, e
		}
		if in != nil {
			break
		}
		if measure != nil { // sized outside the lock (it reads the file's header), then tried again
			if _, err := m.measure(*measure); err != nil {
				return nil, nil, internal(fmt.Errorf("measuring the model %q: %w", measure.Name, err))
			}
			continue
		}
		select { // queued: plan again once a model is idle or unloaded
		case <-w.wake:
		case <-ctx.Done():
			return nil, nil, unavailable("the request ended while it waited for its model to load")
		}
	}

	select {
	case <-in.ready:
	case <-ctx.Done():
		m.release(in, nil)
		return nil, nil, unavailable("the request ended while its model was loading")
	}
	if in.err != nil {
		m.release(in, nil)
		return nil, nil, internal(fmt.Errorf("loading the model %q: %w", r.entry.Name, in.err))
	}
	var refs []messages.LoRARef
	if r.adapter != "" {
		i := slices.Index(in.adapters, r.adapter)
		if i < 0 { // the adapter came while its model loaded
			m.release(in, nil)
			return nil, nil, unavailable(fmt.Sprintf("the adapter %q changed while its model loaded; try again", r.adapter))
		}
		for k := range in.own {
			refs = append(refs, messages.LoRARef{ID: k, Scale: 1})
		}
		refs = append(refs, messages.LoRARef{ID: in.own + i, Scale: 1})
	}
	return in, refs, nil
}

// hold is acquire's step under the lock, for a request queued at w (nil:
// not queued): the instance of name, held (busy), starting its load when it
// is not loaded; or the spec to measure first; or the request's place in
// the queue, to wait there (models_queue.go). With an instance or an error
// the request has left the queue.
func (m *Manager) hold(name string, autoload bool, w *waiter) (in *instance, r resolved, measure *LoadSpec, queued *waiter, e *apiError) {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer func() {
		if in != nil || e != nil {
			m.leaveLocked(w)
		}
	}()
	r, ok, err := m.resolve(name)
	if err != nil {
		return nil, r, nil, nil, internal(err)
	}
	if !ok {
		return nil, r, nil, nil, notFound("model_not_found", "the model %q does not exist; this server serves %s", name, quoteList(m.names()))
	}
	in = m.loaded[r.entry.Name]
	if in != nil && r.adapter != "" && !slices.Contains(in.adapters, r.adapter) {
		in.stale = true // loaded before the adapter: reloaded with it
	}
	var evicted []*instance
	started := false
	defer func() { // a version replaced but no load started: stopped on its own
		if !started {
			for _, v := range evicted {
				m.stopAsync(v)
			}
		}
	}()
	if in != nil && in.stale {
		delete(m.loaded, in.name)
		if in.busy > 0 {
			m.retiring = append(m.retiring, in)
		} else {
			m.removeLocked(in) // stopped before the new version loads
			evicted = append(evicted, in)
		}
		in = nil
	}
	var (
		spec     LoadSpec
		size     ModelSize
		adapters []string
	)
	if in == nil {
		if !autoload {
			return nil, r, nil, nil, badRequest("model", "the model %q is not loaded (--no-models-autoload): POST /models/load loads it", name)
		}
		adapters = m.adapterNames(r.entry.Name)
		spec = m.specOf(r.entry, adapters)
		var known bool
		if size, known = m.measured(spec); !known {
			return nil, r, &spec, w, nil
		}
		if m.cfg.MaxBytes > 0 && size.Total() > m.cfg.MaxBytes {
			return nil, r, nil, nil, m.tooLarge(r.entry.Name, size)
		}
	}
	if m.behindLocked(w) { // others wait first, and this one is not served before them
		if w != nil && !m.draining {
			return nil, r, nil, w, nil // not its turn yet
		}
		queued, e = m.waitLocked(w, false, m.queueFull)
		return nil, r, nil, queued, e
	}
	if in == nil {
		victims, waitFree, fits := m.planLocked(size.Total())
		if waitFree || !fits {
			queued, e = m.waitLocked(w, waitFree, func() *apiError { return m.busyError(r.entry.Name, size.Total()) })
			return nil, r, nil, queued, e
		}
		for _, v := range victims {
			m.removeLocked(v)
		}
		evicted = append(evicted, victims...)
		in = &instance{name: r.entry.Name, ready: make(chan struct{}), keep: m.cfg.KeepAlive,
			adapters: adapters, own: len(r.entry.Adapters), size: size}
		m.loaded[in.name] = in
		entry, aliases := *r.entry, r.aliases
		started = true
		go func() {
			for _, v := range evicted { // their memory goes back before the new model takes its own
				<-v.ready
				m.stop(v)
			}
			m.load(in, &entry, aliases, spec)
		}()
	}
	in.busy++
	return in, r, nil, nil, nil
}

// load starts in's runtime and server; in.ready closes when done.
func (m *Manager) load(in *instance, e *modelEntry, aliases []string, spec LoadSpec) {
	defer close(in.ready)
	fail := func(err error) {
		m.mu.Lock()
		in.err = err // under the lock: a waiter whose context ended reads it in release
		if m.loaded[in.name] == in {
			delete(m.loaded, in.name)
		}
		m.wakeLocked()
		m.mu.Unlock()
	}
	rt, closeFn, err := m.cfg.Load(context.Background(), m.system, spec)
	if err != nil {
		fail(err)
		return
	}
	cfg := m.cfg.Server
	cfg.ModelName, cfg.ModelAliases = e.Name, aliases
	if e.Template != "" {
		cfg.ChatTemplate = e.Template
	}
	cfg.Defaults = mergeDefaults(e.Defaults, cfg.Defaults)
	if cfg.ChatTemplate == "" {
		cfg.ChatTemplate = rt.ChatTemplate()
	}
	if cfg.ChatTemplate == "" {
		cfg.ChatTemplate, _ = BuiltinTemplate(FallbackTemplate)
	}
	if e.System != "" {
		cfg.ChatTemplate = systemPrefix(e.System) + cfg.ChatTemplate
	}
	srv, err := New(m.system, rt, cfg)
	if err != nil {
		_ = rt.Stop(5 * time.Second)
		closeFn()
		fail(err)
		return
	}
	srv.Ready()
	m.mu.Lock() // the lists (ps, /v1/models, /metrics) read them under the lock, not after ready
	in.srv, in.rt, in.close = srv, rt, closeFn
	m.mu.Unlock()
	m.cfg.Server.Log.Info().Str("model", e.Name).Msg("model loaded")
}

// systemPrefix is the Jinja that puts a system message with text in front
// of a chat that has none (a Modelfile's SYSTEM); text is checked by
// checkSystem.
func systemPrefix(text string) string {
	lit := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(text)
	return `{%- if not (messages and messages[0]['role'] == 'system') -%}` +
		`{%- set messages = [{'role': 'system', 'content': "` + lit + `"}] + messages -%}{%- endif -%}`
}

// mergeDefaults is d with the fields it leaves unset taken from base.
func mergeDefaults(d, base SamplingDefaults) SamplingDefaults {
	d.Temperature = cmp.Or(d.Temperature, base.Temperature)
	d.TopK = cmp.Or(d.TopK, base.TopK)
	d.TopP = cmp.Or(d.TopP, base.TopP)
	d.MinP = cmp.Or(d.MinP, base.MinP)
	d.RepetitionPenalty = cmp.Or(d.RepetitionPenalty, base.RepetitionPenalty)
	d.Seed = cmp.Or(d.Seed, base.Seed)
	return d
}

// release lets go of in after a request; keep, when set, is the request's
// keep_alive. An idle model whose keep-alive is 0, or that is stale, is
// unloaded now (before the response is complete for the client).
func (m *Manager) release(in *instance, keep *time.Duration) {
	m.mu.Lock()
	in.busy--
	in.used = m.cfg.Now()
	if keep != nil {
		in.keep = *keep
	}
	var drop bool
	if in.busy == 0 {
		m.wakeLocked() // a model in the way of a queued load may go now
		if slices.Contains(m.retiring, in) {
			m.removeLocked(in)
			drop = true
		} else if m.loaded[in.name] == in && (in.keep == 0 || in.stale || in.err != nil) {
			if in.err != nil {
				delete(m.loaded, in.name) // nothing loaded: nothing to free
			} else {
				m.removeLocked(in)
				drop = true
			}
		}
	}
	m.mu.Unlock()
	if drop {
		<-in.ready
		m.stop(in)
	}
}

// expires is when idle in unloads (zero: never).
func (m *Manager) expires(in *instance) time.Time {
	if in.keep < 0 || in.busy > 0 {
		return time.Time{}
	}
	return in.used.Add(in.keep)
}

// Sweep unloads the idle models whose keep-alive has passed.
func (m *Manager) Sweep() {
	now := m.cfg.Now()
	m.mu.Lock()
	var drop []*instance
	for _, in := range m.loaded {
		if in.busy > 0 || in.keep < 0 {
			continue
		}
		if !now.Before(in.used.Add(in.keep)) {
			drop = append(drop, in)
		}
	}
	for _, in := range drop {
		m.removeLocked(in)
	}
	m.mu.Unlock()
	for _, in := range drop {
		m.stop(in)
	}
}

// unload unloads the model name names now when it is idle: false, with
// the reason, when it is busy or not loaded.
func (m *Manager) unload(name string) *apiError {
	m.mu.Lock()
	r, ok, err := m.resolve(name)
	if err != nil {
		m.mu.Unlock()
		return internal(err)
	}
	if !ok {
		m.mu.Unlock()
		return notFound("model_not_found", "the model %q does not exist; this server serves %s", name, quoteList(m.names()))
	}
	in := m.loaded[r.entry.Name]
	switch {
	case in == nil:
		m.mu.Unlock()
		return badRequest("model", "the model %q is not loaded", name)
	case in.busy > 0:
		m.mu.Unlock()
		return &apiError{Status: http.StatusConflict, Type: "invalid_request_error", Code: strp("model_busy"),
			Message: fmt.Sprintf("the model %q is running %d request(s); unload it once they are done", name, in.busy)}
	}
	m.removeLocked(in)
	m.mu.Unlock()
	<-in.ready
	m.stop(in)
	return nil
}

// stop unloads in, which removeLocked took out of the loaded models: its
// server turns requests away, its runtime stops, its files close, and its
// memory counts as free.
func (m *Manager) stop(in *instance) {
	defer m.freed(in)
	if in.srv == nil {
		return
	}
	in.srv.Drain()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = in.srv.WaitIdle(ctx)
	cancel()
	if err := in.rt.Stop(5 * time.Second); err != nil {
		m.cfg.Server.Log.Warn().Err(err).Str("model", in.name).Msg("stopping the model's runtime; its files stay mapped")
	} else {
		in.close()
	}
	in.srv.closeFront()
	m.cfg.Server.Log.Info().Str("model", in.name).Msg("model unloaded")
}

// stopAsync is stop once in's load is done, in its own goroutine.
func (m *Manager) stopAsync(in *instance) {
	go func() {
		<-in.ready
		m.stop(in)
	}()
}

// closeFront stops the server's front actor (its model is unloaded).
func (s *Server) closeFront() { s.system.Root.Stop(s.front) }
