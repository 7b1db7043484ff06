package anthropic

import (
	"net/http"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// Handler serves the Messages API over a pipeline.Runner.
type Handler struct {
	run pipeline.Runner
}

// New returns a Handler over run.
func New(run pipeline.Runner) *Handler { return &Handler{run: run} }

// Register adds the routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/messages", h.auth(h.messages))
	mux.HandleFunc("POST /v1/messages/count_tokens", h.auth(h.countTokens))
}

// auth accepts the API key as x-api-key (Anthropic's header) or as
// "Authorization: Bearer KEY".
func (h *Handler) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("x-api-key")
		if key == "" {
			key = pipeline.BearerKey(r)
		}
		if !h.run.Authorized(key) {
			writeError(w, &pipeline.Error{Kind: pipeline.Unauthorized, Message: "invalid x-api-key"})
			return
		}
		next(w, r)
	}
}

// read decodes and checks a body.
func (h *Handler) read(w http.ResponseWriter, r *http.Request, count bool) (*request, *pipeline.Request, *pipeline.Error) {
	var req request
	e := pipeline.Decode(w, r, h.run.MaxBodyBytes(), &req)
	if e == nil && req.Model != "" && !h.run.Serves(req.Model) {
		e = &pipeline.Error{Kind: pipeline.NotFound, Param: "model", Message: "model: " + req.Model + " (this server serves " + h.run.Model() + ")"}
	}
	if e == nil && req.Model == "" {
		e = pipeline.Errorf("model", "model: Field required")
	}
	var p *pipeline.Request
	if e == nil {
		p, e = req.toPipeline(count, h.run.Thinks())
	}
	return &req, p, e
}

// messages serves POST /v1/messages.
func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	req, p, e := h.read(w, r, false)
	var run pipeline.Run
	if e == nil {
		run, e = h.run.Start(r.Context(), p)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	msg := &response{ID: newID("msg_"), Type: "message", Role: "assistant", Model: req.Model, Content: []contentBlock{}}
	msg.Usage.InputTokens = run.PromptTokens()
	if req.Stream {
		h.stream(w, run, msg)
		return
	}
	var b builder
	failed := run.Each(func(ev *pipeline.Event) { b.add(msg, ev) })
	if r.Context().Err() != nil {
		return // the client is gone
	}
	if failed != nil {
		writeError(w, failed)
		return
	}
	writeJSON(w, http.StatusOK, msg)
}

// countTokens serves POST /v1/messages/count_tokens.
func (h *Handler) countTokens(w http.ResponseWriter, r *http.Request) {
	_, p, e := h.read(w, r, true)
	n := 0
	if e == nil {
		n, e = h.run.CountTokens(p)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": n})
}

// errorTypes are Anthropic's error types by kind.
var errorTypes = map[pipeline.ErrorKind]string{
	pipeline.Invalid: "invalid_request_error", pipeline.ContextLength: "invalid_request_error",
	pipeline.Unauthorized: "authentication_error", pipeline.NotFound: "not_found_error",
	pipeline.Timeout: "timeout_error", pipeline.TooLarge: "request_too_large",
	pipeline.Overloaded: "rate_limit_error", pipeline.Unavailable: "overloaded_error", pipeline.Internal: "api_error",
}

// errorBody is Anthropic's error shape.
func errorBody(e *pipeline.Error) any {
	typ := errorTypes[e.Kind]
	if typ == "" {
		typ = "api_error"
	}
	return map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": e.Message}}
}

// writeError writes e in Anthropic's shape with its status.
func writeError(w http.ResponseWriter, e *pipeline.Error) { pipeline.WriteError(w, e, errorBody(e)) }

func writeJSON(w http.ResponseWriter, status int, v any) { pipeline.WriteJSON(w, status, v) }

// newID is pipeline.NewID.
func newID(prefix string) string { return pipeline.NewID(prefix) }
