package openai

import (
	"fmt"
	"net/http"
	"time"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// Runner is the pipeline as this dialect needs it: generation,
// embeddings, the served context's length (/v1/models) and the
// fingerprint every response's system_fingerprint carries.
type Runner interface {
	pipeline.Runner
	pipeline.Embedder
	// Fingerprint names the build and model that make the responses.
	Fingerprint() string
	// MaxModelLen is the served context, in tokens.
	MaxModelLen() int
}

// Middleware are the server's wrappers of the routes.
type Middleware struct {
	Auth       func(http.HandlerFunc) http.HandlerFunc // the API key check
	Body       func(http.HandlerFunc) http.HandlerFunc // the bound on the body bytes in flight
	Generation func(http.HandlerFunc) http.HandlerFunc // refuses generation on an encoder model
}

// Handler serves the OpenAI routes over a Runner.
type Handler struct {
	run Runner
}

// New returns a Handler over run.
func New(run Runner) *Handler { return &Handler{run: run} }

// Register adds the routes to mux, wrapped by m.
func (h *Handler) Register(mux *http.ServeMux, m Middleware) {
	mux.HandleFunc("POST /v1/completions", m.Auth(m.Generation(m.Body(h.completions))))
	mux.HandleFunc("POST /v1/chat/completions", m.Auth(m.Generation(m.Body(h.chat))))
	mux.HandleFunc("GET /v1/models", m.Auth(h.models))
	mux.HandleFunc("GET /v1/models/{id...}", m.Auth(h.modelByID))
	mux.HandleFunc("POST /v1/embeddings", m.Auth(m.Body(h.embeddings)))
}

// modelRequest is a body naming the model it is for.
type modelRequest interface{ model() string }

// read decodes the body into req and checks that it names the served
// model (or none); on failure it has written the error.
func (h *Handler) read(w http.ResponseWriter, r *http.Request, req modelRequest) bool {
	e := pipeline.Decode(w, r, h.run.MaxBodyBytes(), req, "Common", "Sampling", "Formats", "LlamaSampling")
	if e == nil {
		if name := req.model(); name != "" && !h.run.Serves(name) {
			e = &pipeline.Error{Kind: pipeline.NotFound, Code: "model_not_found",
				Message: fmt.Sprintf("the model %q does not exist; this server serves %q", name, h.run.Model())}
		}
	}
	if e != nil {
		WriteError(w, e)
		return false
	}
	return true
}

// generationRequest is a body that maps to a pipeline.Request.
type generationRequest interface {
	modelRequest
	toPipeline() (*pipeline.Request, *pipeline.Error)
}

// start reads a generation body into req and starts it on the pipeline;
// head is the start of its response (and of each of its chunks), with an
// ID that begins with idPrefix. On failure it has written the error.
func (h *Handler) start(w http.ResponseWriter, r *http.Request, req generationRequest, idPrefix string) (p *pipeline.Request, run pipeline.Run, head responseHead, ok bool) {
	created := time.Now().Unix()
	if !h.read(w, r, req) {
		return nil, nil, head, false
	}
	p, e := req.toPipeline()
	if e == nil {
		if run, e = h.run.Start(r.Context(), p); e == nil {
			return p, run, responseHead{ID: pipeline.NewID(idPrefix), Created: created, Model: h.run.Model(), SystemFingerprint: h.run.Fingerprint()}, true
		}
	}
	WriteError(w, e)
	return nil, nil, head, false
}

// errorJSON is OpenAI's error object.
type errorJSON struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// errorBody is e in OpenAI's shape, {"error": {...}}.
func errorBody(e *pipeline.Error) any {
	code := e.Code
	switch {
	case code != "":
	case e.Kind == pipeline.ContextLength:
		code = "context_length_exceeded"
	case e.Kind == pipeline.TooLarge:
		code = "request_too_large"
	}
	typ := pipeline.OpenAIErrorType(e.Kind)
	if typ == "" {
		typ = "server_error"
	}
	return struct {
		Error errorJSON `json:"error"`
	}{errorJSON{Message: e.Message, Type: typ, Param: strp(e.Param), Code: strp(code)}}
}

// WriteError writes e in OpenAI's shape with its status.
func WriteError(w http.ResponseWriter, e *pipeline.Error) { pipeline.WriteError(w, e, errorBody(e)) }

// ErrorEvent is the event that reports a choice that failed mid-stream,
// in the runtime's words.
func ErrorEvent(msg string) any {
	return map[string]any{"error": &errorJSON{Message: msg, Type: "server_error"}}
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
