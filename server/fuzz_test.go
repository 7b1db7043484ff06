package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/troupe-llm/troupe/actors"
)

// FuzzRequests posts arbitrary bodies to every JSON endpoint: the server
// never panics, never answers 5xx to a client's bytes, and every error is
// OpenAI's shape. The context is short, so no input runs long.
func FuzzRequests(f *testing.F) {
	for _, seed := range []string{
		`{"prompt": "Once upon a time", "max_tokens": 4}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}}`,
		`{"prompt": [[1, 2], [3]], "n": 2, "logprobs": 2, "echo": true, "stop": ["a", "b"]}`,
		`{"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}], "logprobs": true, "top_logprobs": 3, "logit_bias": {"5": -100}}`,
		`{"prompt": "x", "temperature": 1e308, "top_p": -0, "seed": -1, "max_tokens": 2}`,
		`{"tokens": [1, 2, 3]}`,
		`{"prompt": "\u0000\ud800", "add_special_tokens": false}`,
		`{"prompt": "x", "max_tokens": 3, "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/b"}}, "$defs": {"b": {"type": "integer"}}}}}}`,
		`{"prompt": "x", "max_tokens": 3, "structured_outputs": {"regex": "(a|b)+[0-9]{2,}"}, "guided_choice": ["x"]}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}], "tool_choice": "required"}`,
		`{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Once"}], "continue_final_message": true, "grammar": "root ::= [a-z]{1,3}"}`,
		`{"messages": [{"role": "developer", "content": "d"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": null, "reasoning_content": "r", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "content": "x"}], "reasoning_effort": "high", "chat_template_kwargs": {"reasoning_effort": "high"}, "max_tokens": 2}`,
	} {
		f.Add(0, []byte(seed))
	}
	fx := newFixture(f, options{rt: actors.Config{MaxModelLen: 48}})
	h := fx.srv.Handler()
	paths := []string{"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}
	f.Fuzz(func(t *testing.T, route int, body []byte) {
		path := paths[uint(route)%uint(len(paths))]
		rec := fuzzPost(t, h, path, body)
		if rec.Code >= 400 {
			var e struct {
				Error *struct{ Message, Type string } `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == nil || e.Error.Message == "" {
				t.Fatalf("%s %q: status %d without an OpenAI error: %s", path, body, rec.Code, rec.Body.String())
			}
		}
	})
}

// fuzzPost posts body to path through h and returns the response; a 5xx
// ends the test (a client's bytes never cause one).
func fuzzPost(t *testing.T, h http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	if rec.Code >= 500 {
		t.Fatalf("%s %q: status %d: %s", path, body, rec.Code, rec.Body.String())
	}
	return rec
}
