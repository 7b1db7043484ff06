package ollama

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// Version is the Ollama release whose API these routes follow, what
// /api/version answers (clients compare it against the features they use).
const Version = "0.24.0"

// Runner is the pipeline as this dialect needs it.
type Runner interface {
	pipeline.Runner
	pipeline.Embedder
	// MaxModelLen is the served context, in tokens (num_ctx's bound).
	MaxModelLen() int
	// HasTemplate reports whether the model has a usable chat template
	// (without one, /api/generate sends the prompt as it is).
	HasTemplate() bool
	// Admissible is nil when a request would be admitted now, else the
	// error it would get (loading, draining, a full queue).
	Admissible() *pipeline.Error
}

// Handler serves Ollama's routes over a Runner, describing model.
type Handler struct {
	run   Runner
	model *Model
}

// New returns a Handler over run, serving model.
func New(run Runner, model *Model) *Handler { return &Handler{run: run, model: model} }

// Register adds the routes to mux, each wrapped by auth (the server's API
// key check, writing Ollama's error shape).
func (h *Handler) Register(mux *http.ServeMux, auth func(http.HandlerFunc) http.HandlerFunc) {
	mux.HandleFunc("POST /api/generate", auth(h.generate))
	mux.HandleFunc("POST /api/chat", auth(h.chat))
	mux.HandleFunc("POST /api/embed", auth(h.embed))
	mux.HandleFunc("POST /api/embeddings", auth(h.embeddings))
	mux.HandleFunc("GET /api/tags", auth(h.tags))
	mux.HandleFunc("POST /api/show", auth(h.show))
	mux.HandleFunc("GET /api/ps", auth(h.ps))
	mux.HandleFunc("GET /api/version", auth(h.version))
	mux.HandleFunc("HEAD /api/version", auth(h.version))
}

// modelRequest is a body naming the model it is for.
type modelRequest interface{ model() string }

// readModel decodes the body and checks that it names the served model;
// on failure it has written the error.
func (h *Handler) readModel(w http.ResponseWriter, r *http.Request, req modelRequest) bool {
	e := pipeline.Decode(w, r, h.run.MaxBodyBytes(), req)
	if e == nil {
		e = h.checkModel(req.model())
	}
	if e != nil {
		WriteError(w, e)
		return false
	}
	return true
}

// Name is the served model's name as Ollama lists it: with a tag,
// ":latest" when the served name has none.
func Name(served string) string {
	if !strings.Contains(served[strings.LastIndex(served, "/")+1:], ":") {
		served += ":latest"
	}
	return served
}

// checkModel is CheckModel for the served model.
func (h *Handler) checkModel(name string) *pipeline.Error {
	for _, served := range h.run.Models()[1:] { // the aliases; the name answers the error
		if name != "" && CheckModel(served, name) == nil {
			return nil
		}
	}
	return CheckModel(h.run.Model(), name)
}

// CheckModel accepts the served model's name, with or without its
// ":latest" tag; any other is Ollama's 404.
func CheckModel(served, name string) *pipeline.Error {
	switch name {
	case "":
		return pipeline.Errorf("model", "model is required")
	case served, Name(served):
		return nil
	}
	return &pipeline.Error{Kind: pipeline.NotFound, Code: "model_not_found", Message: fmt.Sprintf("model '%s' not found", name)}
}

// WriteError writes e in Ollama's shape, {"error": "message"}, with its
// status and Retry-After.
func WriteError(w http.ResponseWriter, e *pipeline.Error) {
	pipeline.WriteError(w, e, map[string]string{"error": e.Message})
}

// loaded answers a request without a prompt or messages at once, as
// Ollama does once it has loaded the model.
func loaded(w http.ResponseWriter, req *request, chat bool) {
	o := &response{Model: req.Model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: "load"}
	if chat {
		o.Message = &reply{Role: "assistant"}
	} else {
		empty := ""
		o.Response = &empty
	}
	pipeline.WriteJSON(w, http.StatusOK, o)
}

// generate serves POST /api/generate.
func (h *Handler) generate(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, false)
}

// chat serves POST /api/chat. The conversation is rendered with the chat
// template as /v1/chat/completions renders it; with tools, the model's
// calls come back in message.tool_calls (Ollama has no tool_choice: it is
// "auto").
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, true)
}

// serve reads a body, maps it, starts it and answers.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, chat bool) {
	start := time.Now()
	var req request
	if !h.readModel(w, r, &req) {
		return
	}
	if chat && len(req.Messages) == 0 || !chat && req.Prompt == "" && req.checkGenerate() == nil {
		if e := h.run.Admissible(); e != nil { // the model is not loaded yet, or is going away
			WriteError(w, e)
			return
		}
		loaded(w, &req, chat)
		return
	}
	var p *pipeline.Request
	var e *pipeline.Error
	if chat {
		p, e = h.chatRequest(&req)
	} else {
		p, e = h.generateRequest(&req)
	}
	if e == nil {
		var run pipeline.Run
		if run, e = h.run.Start(r.Context(), p); e == nil {
			h.answer(w, r, &req, run, start, chat)
			return
		}
		if p.Suffix != nil && e.Param == "suffix" { // the model has no FIM tokens
			e.Message = fmt.Sprintf("%q does not support insert: %s", req.Model, e.Message) // Ollama's words
		}
	}
	WriteError(w, e)
}
