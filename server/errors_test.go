package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/server"
)

// TestBadRequests: each mistake gets its documented status and OpenAI's
// error shape, never a 500.
func TestBadRequests(t *testing.T) {
	f := newFixture(t, options{srv: server.Config{MaxBodyBytes: 16 << 10}})
	noTmpl := newFixture(t, options{noTmpl: true})
	long := strings.Repeat("once upon a time ", 200)
	cases := []struct {
		name, url, body string
		status          int
		param           string
	}{
		{"malformed JSON", "/v1/completions", `{"prompt": "x"`, 400, ""},
		{"response_format unknown", "/v1/chat/completions", `{"messages": [{"role":"user","content":"hi"}], "response_format": {"type": "sound"}}`, 400, "response_format"},
		{"response_format not an object", "/v1/chat/completions", `{"messages": [{"role":"user","content":"hi"}], "response_format": "json"}`, 400, "response_format"},
		{"tool_choice required", "/v1/chat/completions", `{"messages": [{"role":"user","content":"hi"}], "tool_choice": "required"}`, 400, "tool_choice"},
		{"tool_choice named", "/v1/chat/completions", `{"messages": [{"role":"user","content":"hi"}], "tool_choice": {"type": "function", "function": {"name": "f"}}}`, 400, "tool_choice"},
		{"tool_choice unknown", "/v1/chat/completions", `{"messages": [{"role":"user","content":"hi"}], "tool_choice": "always"}`, 400, "tool_choice"},
		{"not an object", "/v1/completions", `[1, 2]`, 400, ""},
		{"empty body", "/v1/completions", ``, 400, ""},
		{"wrong type", "/v1/completions", `{"prompt": "x", "max_tokens": "ten"}`, 400, "max_tokens"},
		{"wrong type bool", "/v1/chat/completions", `{"messages": [{"role":"user","content":"hi"}], "stream": "yes"}`, 400, "stream"},
		{"bad prompt type", "/v1/completions", `{"prompt": {"a": 1}}`, 400, "prompt"},
		{"no prompt", "/v1/completions", `{"max_tokens": 3}`, 400, "prompt"},
		{"temperature", "/v1/completions", `{"prompt": "x", "temperature": 3}`, 400, "temperature"},
		{"top_p", "/v1/completions", `{"prompt": "x", "top_p": 0}`, 400, "top_p"},
		{"n", "/v1/completions", `{"prompt": "x", "n": 0}`, 400, "n"},
		{"penalty", "/v1/chat/completions", `{"messages": [{"role":"user","content":"hi"}], "presence_penalty": 5}`, 400, "presence_penalty"},
		{"logit bias key", "/v1/completions", `{"prompt": "x", "logit_bias": {"99999": 1}}`, 400, "logit_bias"},
		{"logit bias value", "/v1/completions", `{"prompt": "x", "logit_bias": {"5": 101}}`, 400, "logit_bias"},
		{"too many stops", "/v1/completions", `{"prompt": "x", "stop": [` + strings.Repeat(`"a",`, 256) + `"b"]}`, 400, "stop"},
		{"stop too long", "/v1/completions", `{"prompt": "x", "stop": "` + strings.Repeat("z", 1025) + `"}`, 400, "stop"},
		{"too many stop token ids", "/v1/completions", `{"prompt": "x", "stop_token_ids": [` + strings.Repeat("1,", 1024) + `1]}`, 400, "stop_token_ids"},
		{"logit bias too big", "/v1/completions", `{"prompt": "x", "logit_bias": {` + manyBiases(1025) + `}}`, 400, "logit_bias"},
		{"n too big", "/v1/completions", `{"prompt": "x", "n": 129}`, 400, "n"},
		{"n times prompts", "/v1/completions", `{"prompt": ["a","b","c"], "n": 50}`, 400, "n"},
		{"too many prompts", "/v1/completions", `{"prompt": [` + strings.Repeat(`"a",`, 64) + `"a"]}`, 400, "prompt"},
		{"max_tokens 0", "/v1/completions", `{"prompt": "x", "max_tokens": 0}`, 400, "max_tokens"},
		{"over the context", "/v1/completions", `{"prompt": "x", "max_tokens": 100000}`, 400, "max_tokens"},
		{"token id out of range", "/v1/completions", `{"prompt": [1, 99999]}`, 400, "prompt"},
		{"top_logprobs without logprobs", "/v1/chat/completions", `{"messages": [{"role":"user","content":"hi"}], "top_logprobs": 2}`, 400, "top_logprobs"},
		{"top_logprobs range", "/v1/chat/completions", `{"messages": [{"role":"user","content":"hi"}], "logprobs": true, "top_logprobs": 21}`, 400, "top_logprobs"},
		{"bad role", "/v1/chat/completions", `{"messages": [{"role":"wizard","content":"hi"}]}`, 400, "messages"},
		{"no messages", "/v1/chat/completions", `{"messages": []}`, 400, "messages"},
		{"image part", "/v1/chat/completions", `{"messages": [{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages[0].content[0]"},
		{"unknown model", "/v1/completions", `{"model": "gpt-9", "prompt": "x"}`, 404, ""},
		{"unknown route", "/v1/audio/speech", `{"input": "x"}`, 404, ""},
		{"body too large", "/v1/completions", `{"prompt": "` + strings.Repeat("a", 20000) + `"}`, 413, ""},
		{"stop_token_ids out of range", "/v1/completions", `{"prompt": "x", "stop_token_ids": [99999]}`, 400, "stop_token_ids"},
		{"detokenize out of range", "/detokenize", `{"tokens": [1, -5]}`, 400, ""},
		{"invalid UTF-8 prompt", "/v1/completions", "{\"prompt\": \"\xff\xfe\xfd\"}", 400, ""},
		{"invalid UTF-8 in a list", "/v1/completions", "{\"prompt\": [\"ok\", \"a\xc3\"]}", 400, ""},
		{"invalid UTF-8 message", "/v1/chat/completions", "{\"messages\": [{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}", 400, ""},
		{"invalid UTF-8 stop", "/v1/chat/completions", "{\"messages\": [{\"role\":\"user\",\"content\":\"hi\"}], \"stop\": \"\x80\"}", 400, ""},
		{"invalid UTF-8 unknown field", "/v1/completions", "{\"prompt\": \"x\", \"extra\": \"\xc0\xaf\"}", 400, ""},
		{"invalid UTF-8 tokenize", "/tokenize", "{\"prompt\": \"\xff\xfe\xfd\"}", 400, ""},
		{"invalid UTF-8 detokenize", "/detokenize", "{\"tokens\": [1], \"model\": \"\xff\"}", 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkError(t, f.url+tc.url, tc.body, tc.status, tc.param)
		})
	}
	t.Run("logit bias count", func(t *testing.T) {
		msg := checkError(t, f.url+"/v1/completions", `{"prompt": "x", "logit_bias": {`+manyBiases(1025)+`}}`, 400, "logit_bias")
		if !strings.Contains(msg, "at most 1024") {
			t.Errorf("message %q does not give the limit", msg)
		}
	})
	t.Run("no chat template", func(t *testing.T) {
		body := checkError(t, noTmpl.url+"/v1/chat/completions", `{"messages": [{"role":"user","content":"hi"}]}`, 400, "messages")
		if !strings.Contains(body, "chat template") {
			t.Errorf("message %q does not say the model has no chat template", body)
		}
	})
	t.Run("prompt fills the context", func(t *testing.T) {
		big := newFixture(t, options{rt: actors.Config{MaxModelLen: 64}})
		checkError(t, big.url+"/v1/completions", `{"prompt": "`+long+`"}`, 400, "prompt")
	})
	f.waitIdle(t)
}

// manyBiases is n distinct logit_bias entries (the count is checked before
// the keys: most of these are not token ids of stories260K).
func manyBiases(n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"%d": 1`, i)
	}
	return strings.Join(keys, ",")
}

// checkError posts body and checks the status and OpenAI's error shape.
func checkError(t *testing.T, url, body string, status int, param string) string {
	t.Helper()
	resp, b := post(t, url, body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
	}
	var e struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an OpenAI error: %s", b)
	}
	if param != "" && (e.Error.Param == nil || *e.Error.Param != param) {
		t.Errorf("param %v, want %q (%s)", e.Error.Param, param, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	return e.Error.Message
}

// TestAdmission: 503 while loading and draining, 401 without the API key,
// 429 with Retry-After when the queue is full.
func TestAdmission(t *testing.T) {
	loading := newFixture(t, options{notReady: true})
	checkError(t, loading.url+"/v1/completions", `{"prompt": "x"}`, 503, "")
	if resp, _ := http.Get(loading.url + "/health"); resp.StatusCode != 503 {
		t.Errorf("/health while loading: %d", resp.StatusCode)
	}
	loading.srv.Ready()
	if resp, _ := http.Get(loading.url + "/health"); resp.StatusCode != 200 {
		t.Errorf("/health when ready: %d", resp.StatusCode)
	}
	loading.srv.Drain()
	checkError(t, loading.url+"/v1/completions", `{"prompt": "x"}`, 503, "")

	keyed := newFixture(t, options{srv: server.Config{APIKey: "sesame"}})
	checkError(t, keyed.url+"/v1/completions", `{"prompt": "x"}`, 401, "")
	if resp, err := http.Get(keyed.url + "/v1/models"); err != nil || resp.StatusCode != 401 {
		t.Errorf("GET /v1/models without the key: %v %v", resp.StatusCode, err)
	}
	if resp, _ := post(t, keyed.url+"/v1/completions", `{"prompt": "x", "max_tokens": 2}`, "Authorization", "Bearer sesame"); resp.StatusCode != 200 {
		t.Errorf("with the key: %d", resp.StatusCode)
	}

	// One sequence at a time and no queue: a second request while a long
	// stream runs is turned away.
	busy := newFixture(t, options{rt: actors.Config{MaxNumSeqs: 1}, srv: server.Config{MaxQueue: -1}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, busy.url+"/v1/completions",
		strings.NewReader(`{"prompt": "Once", "max_tokens": 400, "stream": true, "ignore_eos": true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r, b := post(t, busy.url+"/v1/completions", `{"prompt": "x"}`)
	if r.StatusCode != 429 || r.Header.Get("Retry-After") == "" {
		t.Errorf("while busy: %d, Retry-After %q: %s", r.StatusCode, r.Header.Get("Retry-After"), b)
	}
	cancel()
	busy.waitIdle(t)
}
