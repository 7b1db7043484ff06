package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/server"
	"github.com/troupe-llm/troupe/server/servetest"
)

// FuzzOllamaRequests posts arbitrary bodies to Ollama's routes: the server
// never panics, never answers 5xx to a client's bytes, and every error is
// Ollama's {"error": "..."}, whole or as a stream's line. The context is
// short, so no input runs long. A second server, with Qwen3's template, runs
// the output through the tool-call and reasoning parser.
func FuzzOllamaRequests(f *testing.F) {
	for _, seed := range []string{
		`{"model": "stories", "prompt": "Once upon a time", "options": {"num_predict": 4}}`,
		`{"model": "stories:latest", "prompt": "Once", "raw": true, "stream": false, "options": {"temperature": 0, "stop": ["a"], "seed": 3}}`,
		`{"model": "stories", "messages": [{"role": "user", "content": "hi"}], "options": {"num_predict": 3, "repeat_last_n": 0}, "think": false}`,
		`{"model": "stories", "messages": [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}, {"role": "tool", "content": "1", "tool_name": "f"}]}`,
		`{"model": "stories", "prompt": "x", "context": [1, 2, 3], "format": "json", "logprobs": true, "top_logprobs": 2, "options": {"num_predict": 2}}`,
		`{"model": "stories", "prompt": "x", "format": {"type": "object"}, "options": {"num_ctx": 40, "num_predict": -1, "top_k": -5}}`,
		`{"model": "stories", "verbose": true}`,
		`{"model": "stories", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}], "think": "high"}`,
	} {
		f.Add(0, []byte(seed))
		f.Add(4, []byte(seed)) // the second server's /api/chat
	}
	fx := newFixture(f, options{rt: actors.Config{MaxModelLen: 48}})
	// A second server whose template has tools and thinking: its output
	// goes through the tool-call parser.
	fq := newFixture(f, options{rt: actors.Config{MaxModelLen: 48}, srv: server.Config{ChatTemplate: servetest.Template(f, qwen3)}})
	handlers := []http.Handler{fx.srv.Handler(), fq.srv.Handler()}
	paths := []string{"/api/generate", "/api/chat", "/api/show"}
	f.Fuzz(func(t *testing.T, route int, body []byte) {
		path := paths[uint(route)%uint(len(paths))]
		h := handlers[uint(route)/uint(len(paths))%2]
		rec := fuzzPost(t, h, path, body)
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
