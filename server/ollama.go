package server

import (
	"net/http"

	"github.com/troupe-llm/troupe/server/ollama"
)

// Ollama's API (github.com/ollama/ollama, docs/api.md) beside OpenAI's, on
// the same port: the server/ollama dialect, over the pipeline and the
// served model's description (newOllamaModel). Errors have Ollama's
// shape, {"error": "..."} (writeOllamaError).

// ollamaRoutes adds the /api routes (server/ollama), and Ollama's 404 for
// the others.
func (s *Server) ollamaRoutes() {
	auth := func(h http.HandlerFunc) http.HandlerFunc { return s.authAs(writeOllamaError, h) }
	ollama.New(s, newOllamaModel(s)).Register(s.mux, auth)
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeOllamaError(w, notFound("", "no route %s %s", r.Method, r.URL.Path))
	})
}
