package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/internal/syncbuf"
	"github.com/troupe-llm/troupe/server"
)

// do sends a request with no body and returns the response (body read).
func do(t *testing.T, method, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp, b.Bytes()
}

// apiErr is OpenAI's error body.
type apiErr struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func decodeErr(t *testing.T, b []byte) apiErr {
	t.Helper()
	var e apiErr
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not OpenAI's error shape: %s (%v)", b, err)
	}
	return e
}

// TestRoutesWithoutV1: every /v1 route answers without the prefix too, the
// same as with it; routes of their own are left alone.
func TestRoutesWithoutV1(t *testing.T) {
	f := newFixture(t, options{srv: server.Config{APIKey: "k"}})
	auth := []string{"Authorization", "Bearer k"}
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/models", ""},
		{"GET", "/models/" + modelName, ""},
		{"POST", "/completions", `{"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0}`},
		{"POST", "/chat/completions", `{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			var bodies []string
			for _, prefix := range []string{"/v1", ""} {
				var resp *http.Response
				var b []byte
				if tc.method == "GET" {
					resp, b = do(t, "GET", f.url+prefix+tc.path, auth...)
				} else {
					resp, b = post(t, f.url+prefix+tc.path, tc.body, auth...)
				}
				if resp.StatusCode != 200 {
					t.Fatalf("%s %s: %d %s", tc.method, prefix+tc.path, resp.StatusCode, b)
				}
				var v map[string]any
				if err := json.Unmarshal(b, &v); err != nil {
					t.Fatal(err)
				}
				delete(v, "id")
				delete(v, "created")
				delete(v, "usage") // the second finds the prompt cached
				out, _ := json.Marshal(v)
				bodies = append(bodies, string(out))
			}
			if bodies[0] != bodies[1] {
				t.Errorf("with /v1: %s\nwithout: %s", bodies[0], bodies[1])
			}
		})
	}
	// The key still guards the unprefixed form.
	if resp, b := do(t, "GET", f.url+"/models"); resp.StatusCode != 401 {
		t.Errorf("/models without the key: %d %s", resp.StatusCode, b)
	}
	if resp, _ := do(t, "GET", f.url+"/health"); resp.StatusCode != 200 {
		t.Errorf("/health: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "GET", f.url+"/nothing"); resp.StatusCode != 404 {
		t.Errorf("/nothing: %d", resp.StatusCode)
	}
}

// TestCORS: OPTIONS answers on every route (204 with Allow), a preflight
// from an allowed origin gets the CORS headers, other origins none.
func TestCORS(t *testing.T) {
	const origin = "http://ui.example"
	f := newFixture(t, options{srv: server.Config{AllowedOrigins: []string{origin}, APIKey: "k"}})
	for _, tc := range []struct{ path, allow string }{
		{"/v1/chat/completions", "POST, OPTIONS"},
		{"/chat/completions", "POST, OPTIONS"},
		{"/v1/completions", "POST, OPTIONS"},
		{"/v1/models", "GET, HEAD, OPTIONS"},
		{"/v1/models/" + modelName, "GET, HEAD, OPTIONS"},
		{"/tokenize", "POST, OPTIONS"},
		{"/health", "GET, HEAD, OPTIONS"},
		{"/metrics", "GET, HEAD, OPTIONS"},
		{"/version", "GET, HEAD, OPTIONS"},
	} {
		resp, b := do(t, "OPTIONS", f.url+tc.path, "Origin", origin, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization, content-type")
		h := resp.Header
		if resp.StatusCode != 204 || h.Get("Allow") != tc.allow || h.Get("Access-Control-Allow-Origin") != origin ||
			h.Get("Access-Control-Allow-Methods") != tc.allow || h.Get("Access-Control-Allow-Headers") != "authorization, content-type" {
			t.Errorf("preflight %s: %d %v %s; want 204, Allow %q and the CORS headers", tc.path, resp.StatusCode, h, b, tc.allow)
		}
		resp, _ = do(t, "OPTIONS", f.url+tc.path, "Origin", "http://evil.example", "Access-Control-Request-Method", "POST")
		if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("preflight %s from another origin: %d %v; want 204 without CORS headers", tc.path, resp.StatusCode, resp.Header)
		}
	}
	if resp, _ := do(t, "OPTIONS", f.url+"/nothing", "Origin", origin); resp.StatusCode != 404 {
		t.Errorf("OPTIONS /nothing: %d, want 404", resp.StatusCode)
	}
	// An actual request from the allowed origin is marked; from another, not.
	resp, _ := do(t, "GET", f.url+"/v1/models", "Origin", origin, "Authorization", "Bearer k")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("GET from %s: %d %v", origin, resp.StatusCode, resp.Header)
	}
	resp, _ = do(t, "GET", f.url+"/v1/models", "Origin", "http://evil.example", "Authorization", "Bearer k")
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET from another origin is allowed: %v", resp.Header)
	}
	// No --allowed-origins: same origin only.
	g := newFixture(t, options{})
	resp, _ = do(t, "OPTIONS", g.url+"/v1/completions", "Origin", origin, "Access-Control-Request-Method", "POST")
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no allowed origins: %d %v", resp.StatusCode, resp.Header)
	}
	// "*" allows any.
	g = newFixture(t, options{srv: server.Config{AllowedOrigins: []string{"*"}}})
	resp, _ = do(t, "OPTIONS", g.url+"/v1/completions", "Origin", origin, "Access-Control-Request-Method", "POST")
	if resp.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("--allowed-origins '*': %v", resp.Header)
	}
}

// TestVersionAndModel: GET /version reports the build; GET
// /v1/models/{id} the model, or OpenAI's 404 for another id.
func TestVersionAndModel(t *testing.T) {
	v := server.VersionInfo{Version: "v1.2.3", Commit: "abc123", GoVersion: "go1.x", ISA: "avx2", OS: "linux", Arch: "amd64"}
	f := newFixture(t, options{srv: server.Config{Version: v}})
	resp, b := do(t, "GET", f.url+"/version")
	var got server.VersionInfo
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 200 || got != v {
		t.Errorf("/version: %d %s; want %+v", resp.StatusCode, b, v)
	}
	resp, b = do(t, "GET", f.url+"/v1/models/"+modelName)
	var m struct{ ID, Object string }
	if err := json.Unmarshal(b, &m); err != nil || resp.StatusCode != 200 || m.ID != modelName || m.Object != "model" {
		t.Errorf("/v1/models/%s: %d %s", modelName, resp.StatusCode, b)
	}
	for _, id := range []string{"gpt-4", "org/other-model"} {
		resp, b = do(t, "GET", f.url+"/v1/models/"+id)
		e := decodeErr(t, b)
		if resp.StatusCode != 404 || e.Error.Code == nil || *e.Error.Code != "model_not_found" || e.Error.Type != "invalid_request_error" ||
			!strings.Contains(e.Error.Message, id) {
			t.Errorf("/v1/models/%s: %d %s; want 404 model_not_found", id, resp.StatusCode, b)
		}
	}
}

// TestTokenize: a prompt, or messages rendered as chat renders them (the
// same count chat's usage reports); neither is a 400.
func TestTokenize(t *testing.T) {
	f := newFixture(t, options{})
	msgs := `[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]`
	resp, b := post(t, f.url+"/tokenize", `{"messages": `+msgs+`}`)
	var tok struct {
		Tokens []int32 `json:"tokens"`
		Count  int     `json:"count"`
	}
	if err := json.Unmarshal(b, &tok); err != nil || resp.StatusCode != 200 || tok.Count != len(tok.Tokens) || tok.Count < 5 {
		t.Fatalf("tokenize messages: %d %s", resp.StatusCode, b)
	}
	_, b = post(t, f.url+"/v1/chat/completions", `{"messages": `+msgs+`, "max_tokens": 1}`)
	var chat struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &chat); err != nil || chat.Usage.PromptTokens != tok.Count {
		t.Errorf("tokenize says %d tokens, chat's usage %d (%s)", tok.Count, chat.Usage.PromptTokens, b)
	}
	text := f.text(tok.Tokens)
	if !strings.Contains(text, "<|im_start|>system\nBe brief.<|im_end|>") || !strings.HasSuffix(text, "<|im_start|>assistant\n") {
		t.Errorf("tokens read back %q: not the conversation with the generation prompt", text)
	}
	for _, tc := range []struct{ body, param string }{
		{`{}`, "prompt"},
		{`{"model": "` + modelName + `"}`, "prompt"},
		{`{"prompt": "x", "messages": ` + msgs + `}`, "messages"},
		{`{"messages": []}`, "messages"},
	} {
		resp, b := post(t, f.url+"/tokenize", tc.body)
		e := decodeErr(t, b)
		if resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Errorf("tokenize %s: %d %s; want 400 about %s", tc.body, resp.StatusCode, b, tc.param)
		}
	}
	if resp, b := post(t, f.url+"/tokenize", `{"prompt": "Once"}`); resp.StatusCode != 200 {
		t.Errorf("tokenize a prompt: %d %s", resp.StatusCode, b)
	}
}

// TestContextLengthExceeded: a request that does not fit the context is a
// 400 with OpenAI's code context_length_exceeded.
func TestContextLengthExceeded(t *testing.T) {
	f := newFixture(t, options{})
	long := strings.Repeat("Once upon a time ", 600)
	for _, tc := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt": "Hi", "max_tokens": 100000}`},
		{"/v1/completions", `{"prompt": "` + long + `"}`},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "Hi"}], "max_completion_tokens": 100000}`},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "` + long + `"}]}`},
	} {
		resp, b := post(t, f.url+tc.path, tc.body)
		e := decodeErr(t, b)
		if resp.StatusCode != 400 || e.Error.Code == nil || *e.Error.Code != "context_length_exceeded" {
			t.Errorf("%s %.60s: %d %s; want 400 context_length_exceeded", tc.path, tc.body, resp.StatusCode, b)
		}
	}
}

// chunk is a streamed chunk of either endpoint.
type chunk struct {
	SystemFingerprint string          `json:"system_fingerprint"`
	Timings           json.RawMessage `json:"timings"`
	Choices           []struct {
		Index        int     `json:"index"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
		Delta        struct {
			Content *string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// streamChunks posts a streaming request and returns its chunks.
func streamChunks(t *testing.T, url, body string) []chunk {
	t.Helper()
	resp, b := post(t, url, body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var out []chunk
	eachChunk(t, b, func(c *chunk) { out = append(out, *c) })
	return out
}

// TestStreamShape: every chunk carries the system_fingerprint of the
// plain response; each choice's finish_reason comes in a chunk of its own,
// after its last token, as OpenAI streams.
func TestStreamShape(t *testing.T) {
	f := newFixture(t, options{})
	_, b := post(t, f.url+"/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 3}`)
	var plain chunk
	if err := json.Unmarshal(b, &plain); err != nil || !strings.HasPrefix(plain.SystemFingerprint, "fp_") {
		t.Fatalf("no system_fingerprint: %s", b)
	}
	for _, tc := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 6, "n": 2, "ignore_eos": true, "stream": true}`},
		{"/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 40, "stop": ["."], "temperature": 0, "stream": true}`},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "n": 2, "stream": true}`},
	} {
		chunks := streamChunks(t, f.url+tc.path, tc.body)
		finished := map[int]bool{}
		texts := map[int]int{}
		for i, c := range chunks {
			if c.SystemFingerprint != plain.SystemFingerprint {
				t.Errorf("%s chunk %d: system_fingerprint %q, the plain response's %q", tc.path, i, c.SystemFingerprint, plain.SystemFingerprint)
			}
			for _, ch := range c.Choices {
				hasText := ch.Text != "" || ch.Delta.Content != nil && *ch.Delta.Content != ""
				if finished[ch.Index] {
					t.Errorf("%s: choice %d has a chunk after its finish_reason", tc.path, ch.Index)
				}
				if ch.FinishReason != nil {
					finished[ch.Index] = true
					if hasText {
						t.Errorf("%s chunk %d: text and finish_reason in one chunk", tc.path, i)
					}
				} else if hasText {
					texts[ch.Index]++
				}
			}
		}
		if len(finished) != 2 && strings.Contains(tc.body, `"n": 2`) || len(finished) == 0 {
			t.Errorf("%s: finished choices %v", tc.path, finished)
		}
		for i := range finished {
			if texts[i] == 0 {
				t.Errorf("%s: choice %d streamed no text", tc.path, i)
			}
		}
	}
}

// timings is the opt-in timings object.
type timings struct {
	QueueMs            float64 `json:"queue_ms"`
	CacheN             int     `json:"cache_n"`
	PromptN            int     `json:"prompt_n"`
	PromptMs           float64 `json:"prompt_ms"`
	PredictedN         int     `json:"predicted_n"`
	PredictedMs        float64 `json:"predicted_ms"`
	PredictedPerSecond float64 `json:"predicted_per_second"`
}

// TestTimings: "timings_per_token": true adds llama-server's timings to
// the response (or the stream's last chunk), agreeing with usage; without
// it there are none.
func TestTimings(t *testing.T) {
	f := newFixture(t, options{})
	body := `{"prompt": "Once upon a time", "max_tokens": 8, "ignore_eos": true%s}`
	_, b := post(t, f.url+"/v1/completions", strings.Replace(body, "%s", "", 1))
	if bytes.Contains(b, []byte(`"timings"`)) {
		t.Errorf("timings without asking: %s", b)
	}
	for range 2 { // the second finds the prompt cached
		_, b = post(t, f.url+"/v1/completions", strings.Replace(body, "%s", `, "timings_per_token": true`, 1))
		var r struct {
			Timings *timings `json:"timings"`
			Usage   struct {
				PromptTokens        int `json:"prompt_tokens"`
				CompletionTokens    int `json:"completion_tokens"`
				PromptTokensDetails struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.Timings == nil {
			t.Fatalf("no timings: %s", b)
		}
		tm, u := r.Timings, r.Usage
		if tm.PredictedN != u.CompletionTokens || tm.CacheN != u.PromptTokensDetails.CachedTokens || tm.PromptN+tm.CacheN != u.PromptTokens ||
			!(tm.PromptMs > 0) || !(tm.PredictedMs > 0) || !(tm.PredictedPerSecond > 0) || tm.QueueMs < 0 {
			t.Errorf("timings %+v disagree with usage %+v", tm, u)
		}
	}
	chunks := streamChunks(t, f.url+"/v1/chat/completions",
		`{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "stream": true, "timings_per_token": true}`)
	last := chunks[len(chunks)-1]
	var tm timings
	if err := json.Unmarshal(last.Timings, &tm); err != nil || len(last.Choices) != 0 || tm.PredictedN == 0 || string(last.Usage) != "null" {
		t.Errorf("the stream's last chunk: %+v; want timings, no choices, no usage", last)
	}
	for _, c := range chunks[:len(chunks)-1] {
		if c.Timings != nil {
			t.Errorf("timings before the last chunk")
		}
	}
}

// TestSamplingDefaults: the server's defaults stand in for fields a
// request leaves out; a request's own value wins.
func TestSamplingDefaults(t *testing.T) {
	zero := 0.0
	f := newFixture(t, options{srv: server.Config{Defaults: server.SamplingDefaults{Temperature: &zero}}})
	plain := newFixture(t, options{})
	text := func(url, extra string) string {
		_, b := post(t, url+"/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 24, "ignore_eos": true`+extra+`}`)
		var r struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("%s", b)
		}
		return r.Choices[0].Text
	}
	greedy := text(plain.url, `, "temperature": 0`)
	if got := text(f.url, ""); got != greedy {
		t.Errorf("--temp 0 server, no temperature: %q; want the greedy %q", got, greedy)
	}
	hot := `, "temperature": 2, "seed": 3`
	if a, b := text(f.url, hot), text(plain.url, hot); a != b || a == greedy {
		t.Errorf("the request's temperature 2: %q on the --temp 0 server, %q on a plain one (greedy %q)", a, b, greedy)
	}
}

// TestQuietProbes: /health and /metrics are logged at debug level only;
// other routes at info.
func TestQuietProbes(t *testing.T) {
	var logs syncbuf.Buffer
	f := newFixture(t, options{logTo: &logs})
	do(t, "GET", f.url+"/health")
	do(t, "GET", f.url+"/metrics")
	do(t, "GET", f.url+"/v1/models")
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), `"/v1/models"`) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the line is written after the response
	}
	if got := logs.String(); strings.Contains(got, `"/health"`) || strings.Contains(got, `"/metrics"`) || !strings.Contains(got, `"/v1/models"`) {
		t.Errorf("info-level log:\n%s\nwant /v1/models only", got)
	}
}

// TestDrain: once draining, new generation requests get 503 with
// Retry-After while the one in flight finishes; WaitIdle returns when it has.
func TestDrain(t *testing.T) {
	f := newFixture(t, options{rt: actors.Config{NumBlocks: 64, BlockSize: 16}, wrap: slow(20 * time.Millisecond)})
	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, f.url+"/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 20, "ignore_eos": true}`)
		done <- resp.StatusCode
	}()
	deadline := time.Now().Add(60 * time.Second)
	for f.metric(t, "troupe:num_requests_running") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the request did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Drain's message is in the front actor's mailbox before any later
	// request's admission: no wait is needed.
	f.srv.Drain()
	resp, b := post(t, f.url+"/v1/completions", `{"prompt": "Hi", "max_tokens": 2}`)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("while draining: %d %v %s; want 503 with Retry-After", resp.StatusCode, resp.Header, b)
	}
	if resp, _ := do(t, "GET", f.url+"/health"); resp.StatusCode != 503 {
		t.Errorf("/health while draining: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := f.srv.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 200 {
			t.Errorf("the request in flight: %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Error("WaitIdle returned before the request in flight was answered")
	}
}
