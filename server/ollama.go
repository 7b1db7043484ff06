package server

import (
	"net/http"

	"github.com/troupe-llm/troupe/server/ollama"
)

// Ollama's API (github.com/ollama/ollama, docs/api.md) beside OpenAI's, on
// the same port: /api/generate and /api/chat are the server/ollama dialect
// of the pipeline; /api/tags, /api/show, /api/ps and /api/version describe
// the one served model, and /api/embed embeds. Errors have Ollama's
// shape, {"error": "..."} (writeOllamaError).

// ollamaRoutes adds the /api routes.
func (s *Server) ollamaRoutes() {
	m := newOllamaModel(s)
	for _, r := range []struct {
		pattern string
		h       http.HandlerFunc
	}{
		{"GET /api/tags", m.tags},
		{"POST /api/show", m.show},
		{"GET /api/ps", m.ps},
		{"GET /api/version", s.ollamaVersion},
		{"HEAD /api/version", s.ollamaVersion},
	} {
		s.mux.HandleFunc(r.pattern, s.authAs(writeOllamaError, r.h))
	}
	ollama.New(s).Register(s.mux, func(h http.HandlerFunc) http.HandlerFunc { return s.authAs(writeOllamaError, h) }) // server/ollama
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeOllamaError(w, notFound("", "no route %s %s", r.Method, r.URL.Path))
	})
}

// readOllama decodes the body and checks that it names the served model;
// on failure it has written the error and returns false.
func (s *Server) readOllama(w http.ResponseWriter, r *http.Request, req modelRequest) bool {
	e := decodeBody(w, r, s.cfg.MaxBodyBytes, req)
	if e == nil {
		if pe := ollama.CheckModel(s.cfg.ModelName, req.model()); pe != nil {
			e = &apiError{Status: pe.Status(), Message: pe.Message}
		}
	}
	if e != nil {
		writeOllamaError(w, e)
		return false
	}
	return true
}

// ollamaName is the served model's name as Ollama lists it (ollama.Name).
func (s *Server) ollamaName() string { return ollama.Name(s.cfg.ModelName) }

func (s *Server) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": ollama.Version})
}
