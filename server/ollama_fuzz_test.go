package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors"
)

// FuzzOllamaRequests posts arbitrary bodies to Ollama's routes: the server
// never panics, never answers 5xx to a client's bytes, and every error is
// Ollama's {"error": "..."}, whole or as a stream's line. The context is
// short, so no input runs long.
func FuzzOllamaRequests(f *testing.F) {
	for _, seed := range []string{
		`{"model": "stories", "prompt": "Once upon a time", "options": {"num_predict": 4}}`,
		`{"model": "stories:latest", "prompt": "Once", "raw": true, "stream": false, "options": {"temperature": 0, "stop": ["a"], "seed": 3}}`,
		`{"model": "stories", "messages": [{"role": "user", "content": "hi"}], "options": {"num_predict": 3, "repeat_last_n": 0}, "think": false}`,
		`{"model": "stories", "messages": [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}, {"role": "tool", "content": "1", "tool_name": "f"}]}`,
		`{"model": "stories", "prompt": "x", "context": [1, 2, 3], "format": "json", "logprobs": true, "top_logprobs": 2, "options": {"num_predict": 2}}`,
		`{"model": "stories", "prompt": "x", "format": {"type": "object"}, "options": {"num_ctx": 40, "num_predict": -1, "top_k": -5}}`,
		`{"model": "stories", "verbose": true}`,
	} {
		f.Add(0, []byte(seed))
	}
	fx := newFixture(f, options{rt: actors.Config{MaxModelLen: 48}})
	h := fx.srv.Handler()
	paths := []string{"/api/generate", "/api/chat", "/api/show"}
	f.Fuzz(func(t *testing.T, route int, body []byte) {
		path := paths[uint(route)%uint(len(paths))]
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", path, body, rec.Code, rec.Body.String())
		}
		for _, line := range bytes.Split(bytes.TrimSpace(rec.Body.Bytes()), []byte("\n")) {
			var o map[string]any
			if err := json.Unmarshal(line, &o); err != nil {
				t.Fatalf("%s %q: a line that is not a JSON object: %q", path, body, line)
			}
			if e, ok := o["error"]; ok || rec.Code >= 400 {
				if msg, _ := e.(string); msg == "" || len(o) != 1 {
					t.Fatalf("%s %q: status %d without Ollama's error: %s", path, body, rec.Code, line)
				}
			}
		}
	})
}
