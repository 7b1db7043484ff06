package responses

import (
	"fmt"
	"net/http"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// Handler serves the Responses API over a pipeline.Runner.
type Handler struct {
	run   pipeline.Runner
	store *Store
}

// New returns a Handler over run, with a store bounded by cfg.
func New(run pipeline.Runner, cfg StoreConfig) *Handler {
	return &Handler{run: run, store: NewStore(cfg)}
}

// Register adds the routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/responses", h.auth(h.create))
	mux.HandleFunc("POST /v1/responses/input_tokens", h.auth(h.inputTokens))
	mux.HandleFunc("GET /v1/responses/{id}", h.auth(h.get))
	mux.HandleFunc("DELETE /v1/responses/{id}", h.auth(h.delete))
}

// auth checks "Authorization: Bearer KEY".
func (h *Handler) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.run.Authorized(pipeline.BearerKey(r)) {
			writeError(w, &pipeline.Error{Kind: pipeline.Unauthorized, Message: "missing or incorrect API key (Authorization: Bearer KEY)"})
			return
		}
		next(w, r)
	}
}

// read decodes a body and translates it, with the conversation of
// previous_response_id; on failure it has written the error.
func (h *Handler) read(w http.ResponseWriter, r *http.Request) (*request, *pipeline.Request, []pipeline.Message, bool) {
	var req request
	e := pipeline.Decode(w, r, h.run.MaxBodyBytes(), &req)
	if e == nil && req.Model != "" && !h.run.Serves(req.Model) {
		e = &pipeline.Error{Kind: pipeline.NotFound, Param: "model",
			Message: fmt.Sprintf("the model %q does not exist; this server serves %q", req.Model, h.run.Model())}
	}
	var history []pipeline.Message
	if e == nil && req.PreviousResponseID != nil {
		st := h.store.get(*req.PreviousResponseID)
		if st == nil {
			e = pipeline.Errorf("previous_response_id", "previous_response_id: no stored response %q (unknown, deleted, or expired)", *req.PreviousResponseID)
		} else {
			history = st.history
		}
	}
	var p *pipeline.Request
	if e == nil {
		p, e = req.toPipeline(history)
	}
	if e != nil {
		writeError(w, e)
		return nil, nil, nil, false
	}
	return &req, p, history, true
}

// create serves POST /v1/responses.
func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	req, p, _, ok := h.read(w, r)
	if !ok {
		return
	}
	run, e := h.run.Start(r.Context(), p)
	if e != nil {
		writeError(w, e)
		return
	}
	resp := newResponse(req, h.run.Model())
	a := &assembler{resp: resp}
	var out *pipeline.SSE
	if req.Stream {
		out = pipeline.NewSSE(w)
		a.emit = func(name string, fields map[string]any) { out.Event(name, fields) }
		a.event("response.created", map[string]any{"response": resp})
		a.event("response.in_progress", map[string]any{"response": resp})
	}
	failed := run.Each(a.add)
	if r.Context().Err() != nil {
		return // the client is gone
	}
	if failed != nil {
		resp.Status, resp.Error = "failed", &errorObject{Code: "server_error", Message: failed.Message}
		if out == nil {
			writeError(w, failed)
			return
		}
		a.event("error", map[string]any{"code": errorCode(failed), "message": failed.Message, "param": nilIfEmpty(failed.Param)})
		a.event("response.failed", map[string]any{"response": resp})
		return
	}
	if resp.Store {
		history := append(append([]pipeline.Message{}, p.Messages[instructionCount(req):]...), outputMessages(resp.Output)...)
		h.store.put(resp, history)
	}
	if out == nil {
		pipeline.WriteJSON(w, http.StatusOK, resp)
		return
	}
	done := "response.completed"
	if resp.Status == "incomplete" {
		done = "response.incomplete"
	}
	a.event(done, map[string]any{"response": resp})
}

// instructionCount is the number of messages instructions added.
func instructionCount(req *request) int {
	if req.Instructions != nil && *req.Instructions != "" {
		return 1
	}
	return 0
}

// get serves GET /v1/responses/{id}.
func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	st := h.store.get(r.PathValue("id"))
	if st == nil {
		writeError(w, notFound(r.PathValue("id")))
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, st.resp)
}

// delete serves DELETE /v1/responses/{id}.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !h.store.delete(id) {
		writeError(w, notFound(id))
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response", "deleted": true})
}

// inputTokens serves POST /v1/responses/input_tokens.
func (h *Handler) inputTokens(w http.ResponseWriter, r *http.Request) {
	_, p, _, ok := h.read(w, r)
	if !ok {
		return
	}
	n, e := h.run.CountTokens(p)
	if e != nil {
		writeError(w, e)
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, map[string]any{"object": "response.input_tokens", "input_tokens": n})
}

func notFound(id string) *pipeline.Error {
	return &pipeline.Error{Kind: pipeline.NotFound, Param: "response_id", Message: fmt.Sprintf("Response with id '%s' not found.", id)}
}

// errorCode is OpenAI's code of an error, "" where it has none.
func errorCode(e *pipeline.Error) string {
	switch e.Kind {
	case pipeline.ContextLength:
		return "context_length_exceeded"
	case pipeline.Unauthorized:
		return "invalid_api_key"
	case pipeline.NotFound:
		return "not_found"
	case pipeline.Timeout:
		return "request_timeout"
	case pipeline.Unavailable:
		return "service_unavailable"
	case pipeline.TooLarge:
		return "request_too_large"
	}
	return ""
}

// writeError writes e in OpenAI's shape: {"error": {message, type, param, code}}.
func writeError(w http.ResponseWriter, e *pipeline.Error) {
	pipeline.WriteError(w, e, map[string]any{"error": map[string]any{"message": e.Message, "type": pipeline.OpenAIErrorType(e.Kind),
		"param": nilIfEmpty(e.Param), "code": nilIfEmpty(errorCode(e))}})
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// newID is pipeline.NewID.
func newID(prefix string) string { return pipeline.NewID(prefix) }
