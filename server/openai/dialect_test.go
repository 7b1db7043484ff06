package openai

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

// post sends body to the route through a Handler over f.
func post(f *pipelinetest.Runner, path, body string) *httptest.ResponseRecorder {
	id := func(h http.HandlerFunc) http.HandlerFunc { return h }
	return pipelinetest.Post(func(mux *http.ServeMux) { New(f).Register(mux, Middleware{Auth: id, Body: id, Generation: id}) }, path, body)
}

// TestChatStreamChunks: a runtime chunk's deltas are sent one per event,
// its logprobs on the last of them, the finish in a chunk of its own.
func TestChatStreamChunks(t *testing.T) {
	f := &pipelinetest.Runner{Events: []pipeline.Event{
		{Kind: pipeline.TextDelta, Text: "a"}, {Kind: pipeline.ReasoningDelta, Text: "b"},
		{Kind: pipeline.Chunk, Tokens: []messages.Token{{ID: 1}}, Logprobs: []pipeline.TokenLogprob{{Text: "ab", Bytes: []byte("ab"), Logprob: -1}}},
		{Kind: pipeline.Finish, Finish: pipeline.FinishStop}, {Kind: pipeline.Usage},
	}}
	rec := post(f, "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "stream": true, "logprobs": true}`)
	pipelinetest.Parts(t, rec.Body.String(), "\n\n", []string{`"role":"assistant","content":""`, `"delta":{"content":"a"},"logprobs":null`,
		`"delta":{"reasoning_content":"b"},"logprobs":{"content":[{"token":"ab","logprob":-1,"bytes":[97,98]`,
		`"finish_reason":"stop"`, `[DONE]`})
	if !f.Got.WantLogprobs || f.Got.Messages[0].Content != "hi" {
		t.Errorf("the pipeline got %+v", f.Got)
	}
}

// TestChatParsedAnswer: a parsed output's content is trimmed, null beside
// calls; the calls are whole, their arguments joined.
func TestChatParsedAnswer(t *testing.T) {
	f := &pipelinetest.Runner{Events: []pipeline.Event{
		{Kind: pipeline.TextDelta, Text: " \n"}, {Kind: pipeline.CallStart, Call: &pipeline.CallDelta{ID: "c1", Name: "f"}},
		{Kind: pipeline.CallArgs, Call: &pipeline.CallDelta{Arguments: `{"x":`}}, {Kind: pipeline.CallArgs, Call: &pipeline.CallDelta{Arguments: `1}`}},
		{Kind: pipeline.Chunk}, {Kind: pipeline.Finish, Finish: pipeline.FinishToolCall, Parsed: true}, {Kind: pipeline.Usage},
	}}
	rec := post(f, "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}]}`)
	var resp chatResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("%v: %s", err, rec.Body.String())
	}
	m := resp.Choices[0].Message
	if m.Content != nil || len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Arguments != `{"x":1}` || *resp.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("got %s", rec.Body.String())
	}
	if len(f.Got.Tools) != 1 || f.Got.Tools[0].Raw == nil || !f.Got.ParallelToolCalls {
		t.Errorf("the pipeline got tools %+v", f.Got.Tools)
	}
}

// TestErrorShape: a pipeline error is written in OpenAI's shape, its
// kind's type and code; max_completion_tokens is named as the client sent
// it, and wins over n_predict as it always has.
func TestErrorShape(t *testing.T) {
	f := &pipelinetest.Runner{Err: &pipeline.Error{Kind: pipeline.ContextLength, Param: "max_completion_tokens", Message: "too long"}}
	rec := post(f, "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 9, "n_predict": 5}`)
	want := `{"error":{"message":"too long","type":"invalid_request_error","param":"max_completion_tokens","code":"context_length_exceeded"}}`
	if rec.Code != 400 || strings.TrimSpace(rec.Body.String()) != want {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	if f.Got.Names["max_tokens"] != "max_completion_tokens" || *f.Got.Sampling.MaxTokens != 9 || f.Got.Sampling.NPredict != nil {
		t.Errorf("the pipeline got %+v", f.Got)
	}
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"messages": [], "tool_choice": "required"}`, "tool_choice"},
		{"/v1/chat/completions", `{"messages": [], "top_logprobs": 2}`, "top_logprobs"},
		{"/v1/completions", `{"prompt": "x", "logprobs": 1, "echo": true}`, "echo"},
		{"/v1/completions", `{}`, "prompt"},
		{"/v1/completions", `{"prompt": "x", "temperature": "hot"}`, "temperature"},
	} {
		rec := post(&pipelinetest.Runner{}, tc.path, tc.body)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"param":"`+tc.param+`"`) {
			t.Errorf("%s %s: %d %s; want a 400 about %s", tc.path, tc.body, rec.Code, rec.Body.String(), tc.param)
		}
	}
}

// TestCompletionsEcho: the echoed prompt comes first, and a chunk's
// logprobs' text offsets count the text before it.
func TestCompletionsEcho(t *testing.T) {
	f := &pipelinetest.Runner{Events: []pipeline.Event{
		{Kind: pipeline.Echo, Text: "P"}, {Kind: pipeline.TextDelta, Text: "ab"}, {Kind: pipeline.Chunk},
		{Kind: pipeline.Finish, Finish: pipeline.FinishLength}, {Kind: pipeline.Usage, Usage: messages.Usage{PromptTokens: 1, CompletionTokens: 2}},
	}}
	rec := post(f, "/v1/completions", `{"prompt": ["P"], "echo": true}`)
	var resp completionResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("%v: %s", err, rec.Body.String())
	}
	if c := resp.Choices[0]; c.Text != "Pab" || *c.FinishReason != "length" || resp.Usage.TotalTokens != 3 {
		t.Fatalf("got %s", rec.Body.String())
	}
	if !f.Got.Echo || f.Got.DefaultMaxTokens != 16 || len(f.Got.Prompts) != 1 {
		t.Errorf("the pipeline got %+v", f.Got)
	}
}
