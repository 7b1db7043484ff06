package ollama

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
	"github.com/troupe-llm/troupe/server/pipeline/pipelinetest"
)

// post sends body to the route through a Handler over f serving model.
func post(f *pipelinetest.Runner, model *Model, path, body string) *httptest.ResponseRecorder {
	return pipelinetest.Post(func(mux *http.ServeMux) {
		New(f, model).Register(mux, func(h http.HandlerFunc) http.HandlerFunc { return h })
	}, path, body)
}

// withTools is the model the tests serve unless they need its options.
var withTools = &Model{Name: "m", Tools: true}

// script is a thinking model's answer with a call, in one runtime chunk.
var script = []pipeline.Event{
	{Kind: pipeline.ReasoningDelta, Text: " a"}, {Kind: pipeline.ReasoningDelta, Text: "b "}, {Kind: pipeline.TextDelta, Text: "c"},
	{Kind: pipeline.CallStart, Call: &pipeline.CallDelta{ID: "x", Name: "f"}}, {Kind: pipeline.CallArgs, Call: &pipeline.CallDelta{Arguments: `{"k":1}`}},
	{Kind: pipeline.Chunk, Tokens: []messages.Token{{ID: 5}, {ID: 6}}}, {Kind: pipeline.Finish, Finish: pipeline.FinishToolCall, Parsed: true},
	{Kind: pipeline.Usage, Usage: messages.Usage{PromptTokens: 3, CompletionTokens: 2}, Prompt: []int32{1, 2, 3}},
}

// TestChatStreamParts: a chunk's thinking, content and call go out as
// three objects, the call whole; done_reason is the model's "stop".
func TestChatStreamParts(t *testing.T) {
	f := &pipelinetest.Runner{Thinking: true, Events: script}
	rec := post(f, withTools, "/api/chat", `{"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}], "options": {"temperature": 5}}`)
	pipelinetest.Parts(t, rec.Body.String(), "\n", []string{`"thinking":" ab "`, `"content":"c"`, `"tool_calls":[{"id":"x","function":{"index":0,"name":"f","arguments":{"k":1}}}]`,
		`"done":true,"done_reason":"stop"`})
	if p := f.Got; p.Sampler == nil || p.Sampler.Temperature != 5 || p.Sampler.TopK != 40 || !p.Messages[0].StringContent ||
		string(p.TemplateVars["enable_thinking"]) != "true" {
		t.Errorf("the pipeline got %+v", p)
	}
}

// TestGenerateWhole: stream false answers once, the parsed thinking and
// content trimmed, with the context (prompt and generated tokens).
func TestGenerateWhole(t *testing.T) {
	f := &pipelinetest.Runner{Thinking: true, Events: script}
	rec := post(f, withTools, "/api/generate", `{"model": "m:latest", "prompt": "hi", "stream": false, "options": {"num_predict": 7, "num_ctx": 32}}`)
	var o final
	if err := json.Unmarshal(rec.Body.Bytes(), &o); err != nil {
		t.Fatalf("%v: %s", err, rec.Body.String())
	}
	if *o.Response != "c" || o.Thinking != "ab" || o.DoneReason != "stop" || len(o.Context) != 5 || o.EvalCount != 2 || o.PromptEvalCount != 3 {
		t.Fatalf("got %s", rec.Body.String())
	}
	if p := f.Got; p.DefaultMaxTokens != 7 || p.ContextLimit != 32 || !p.WantPromptIDs || len(p.Messages) != 1 {
		t.Errorf("the pipeline got %+v", p)
	}
	for body, want := range map[string]string{
		`{"model": "m", "prompt": "x", "options": {"num_ctx": 65}}`: `num_ctx`, `{"model": "other", "prompt": "x"}`: `model 'other' not found`,
		`{"model": "m", "prompt": "x", "format": "yaml"}`: `yaml`, `{"model": "m", "prompt": "x", "raw": true, "system": "s"}`: `raw mode`,
	} {
		if rec := post(&pipelinetest.Runner{}, withTools, "/api/generate", body); rec.Code/100 != 4 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d %s; want an error with %q", body, rec.Code, rec.Body.String(), want)
		}
	}
}

// TestModelOptions: the model's options (serve's sampling flags, a
// Modelfile's PARAMETERs) stand in for a request's missing ones, over
// Ollama's defaults; the request's own options win.
func TestModelOptions(t *testing.T) {
	opts := map[string]json.RawMessage{"temperature": json.RawMessage("0"), "top_k": json.RawMessage("7")}
	for body, want := range map[string][2]float32{
		`{"model": "m", "messages": [{"role": "user", "content": "hi"}]}`:                                     {0, 7},
		`{"model": "m", "messages": [{"role": "user", "content": "hi"}], "options": {"temperature": 0.5}}`:    {0.5, 7},
		`{"model": "m", "messages": [{"role": "user", "content": "hi"}], "options": {"top_k": 3, "seed": 1}}`: {0, 3},
	} {
		f := &pipelinetest.Runner{Events: script}
		rec := post(f, &Model{Name: "m", Options: opts}, "/api/chat", body)
		if p := f.Got; rec.Code != http.StatusOK || p == nil || p.Sampler.Temperature != want[0] || float32(p.Sampler.TopK) != want[1] || p.Sampler.TopP != 0.9 {
			t.Errorf("%s: %d, the pipeline got %+v; want temperature %v, top_k %v and Ollama's top_p", body, rec.Code, f.Got, want[0], want[1])
		}
	}
	if len(opts) != 2 {
		t.Errorf("the model's options changed: %v", opts)
	}
}
