package server

import (
	"fmt"
	"net/http"
)

// writeOllamaError writes e in Ollama's shape, {"error": "message"}, with
// its status and Retry-After.
func writeOllamaError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(e.RetryAfter))
	}
	writeJSON(w, e.Status, map[string]string{"error": e.Message})
}
