package server_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server"
	"github.com/troupe-llm/troupe/server/servetest"
)

// Templates of the scripted Ollama tests, under ../shared/models/templates.
const (
	qwen25    = "Qwen-Qwen2.5-7B-Instruct.jinja"              // tools (hermes), no thinking
	qwen3     = "../templates-more/Qwen-Qwen3-0.6B.jinja"     // tools and thinking (<think>, enable_thinking)
	gptOSS    = "../templates-more/openai-gpt-oss-120b.jinja" // tools and thinking (analysis channel, reasoning_effort)
	r1Distill = "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
)

const weatherCall = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"

// ollamaChatBody is an /api/chat request asking about the weather in
// Paris, with extra fields.
func ollamaChatBody(extra string) string {
	return `{"model": "stories", "messages": [{"role": "user", "content": "Weather in Paris?"}]` + extra + `}`
}

// ollamaAnswer is what an answer (or a stream, joined) holds.
type ollamaAnswer struct {
	content, thinking string
	calls             []string // "ID index name arguments", the id "call_" when it is one
	doneReason        string
}

// readAnswer joins the objects of an answer: the content and thinking of
// message (chat) or response and thinking (generate), and the calls. It
// checks that every object but the last has done false, and that no
// streamed object mixes content, thinking and calls.
func readAnswer(t *testing.T, objs []map[string]any, stream bool) ollamaAnswer {
	t.Helper()
	var a ollamaAnswer
	for i, o := range objs {
		if e, ok := o["error"]; ok {
			t.Fatalf("error object %v", e)
		}
		if last := i == len(objs)-1; o["done"] != last {
			t.Fatalf("object %d of %d: done %v", i, len(objs), o["done"])
		}
		m, _ := o["message"].(map[string]any)
		if m == nil {
			m = map[string]any{"content": o["response"], "thinking": o["thinking"]}
		}
		content, _ := m["content"].(string)
		thinking, _ := m["thinking"].(string)
		calls, _ := m["tool_calls"].([]any)
		if kinds := btoi(content != "") + btoi(thinking != "") + btoi(len(calls) > 0); stream && kinds > 1 {
			t.Errorf("streamed object %d mixes content, thinking and calls: %v", i, m)
		}
		a.content += content
		a.thinking += thinking
		for _, c := range calls {
			a.calls = append(a.calls, callText(t, c))
		}
		if r, ok := o["done_reason"].(string); ok {
			a.doneReason = r
		}
	}
	return a
}

// checkAnswer posts body to url (an /api route) and checks that the answer
// is a 200 joining to want, done_reason "stop"; it returns the objects.
func checkAnswer(t *testing.T, url, body string, stream bool, want ollamaAnswer) []map[string]any {
	t.Helper()
	status, _, objs := ollamaDo(t, "POST", url, body)
	if status != 200 {
		t.Fatalf("status %d: %v", status, objs)
	}
	got := readAnswer(t, objs, stream)
	want.doneReason = "stop"
	if got.content != want.content || got.thinking != want.thinking || !slices.Equal(got.calls, want.calls) || got.doneReason != "stop" {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	return objs
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// callText writes a tool call of an answer as "ID index name arguments".
func callText(t *testing.T, c any) string {
	t.Helper()
	m, _ := c.(map[string]any)
	fn, _ := m["function"].(map[string]any)
	id, _ := m["id"].(string)
	if strings.HasPrefix(id, "call_") {
		id = "call_"
	}
	args, err := json.Marshal(fn["arguments"])
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %v %v %s", id, fn["index"], fn["name"], args)
}

// TestOllamaToolCalls: with tools, /api/chat reads the model's calls with
// the template's parser: they come back in message.tool_calls, with
// Ollama's id and index and the arguments as an object, done_reason
// "stop"; streamed, each call whole in an object of its own. A call that
// does not parse is content; without tools a call's text is content.
func TestOllamaToolCalls(t *testing.T) {
	s := newScripted(t, qwen25, server.Config{})
	oslo := strings.Replace(weatherCall, "Paris", "Oslo", 1)
	bad := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>"
	paris, osloCall := `call_ 0 get_weather {"city":"Paris"}`, `call_ 1 get_weather {"city":"Oslo"}`
	for _, tc := range []struct {
		name   string
		pieces []string
		extra  string // more fields of the request
		want   ollamaAnswer
	}{
		{"call", []string{weatherCall}, "", ollamaAnswer{calls: []string{paris}}},
		{"text then a call", []string{"Let me check.\n<tool", weatherCall[5:]}, "", ollamaAnswer{content: "Let me check.", calls: []string{paris}}},
		{"two calls", []string{weatherCall, "\n", oslo}, "", ollamaAnswer{calls: []string{paris, osloCall}}},
		{"a call cut in pieces", []string{"<tool_", "call>\n{\"name\": \"get_weather\", ", weatherCall[len("<tool_call>\n{\"name\": \"get_weather\", "):]}, "",
			ollamaAnswer{calls: []string{paris}}},
		{"malformed", []string{bad[:15], bad[15:]}, "", ollamaAnswer{content: bad}},
		{"plain text", []string{"It is ", "sunny."}, "", ollamaAnswer{content: "It is sunny."}},
		{"no tools", []string{weatherCall}, "no tools", ollamaAnswer{content: weatherCall}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream %v", tc.name, stream), func(t *testing.T) {
				s.say(messages.FinishStop, tc.pieces...)
				extra := fmt.Sprintf(`, "stream": %v`, stream)
				if tc.extra != "no tools" {
					extra += ", " + weatherTools
				}
				objs := checkAnswer(t, s.url+"/api/chat", ollamaChatBody(extra), stream, tc.want)
				if req := s.last(t); req.SpecialText != (tc.extra != "no tools") {
					t.Errorf("SpecialText %v: the parser must see the markers, and only then", req.SpecialText)
				}
				if last := objs[len(objs)-1]; stream && last["message"].(map[string]any)["content"] != "" {
					t.Errorf("the final object of a stream: %v", last)
				}
			})
		}
	}

	// The conversation goes on: the assistant's call (arguments an object,
	// as Ollama's clients send them) and the tool's answer render.
	s.say(messages.FinishStop, "It is 18 C.")
	status, _, objs := ollamaDo(t, "POST", s.url+"/api/chat", `{"model": "stories", "stream": false, `+weatherTools+`, "messages": [
		{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}]},
		{"role": "tool", "content": "18 C", "tool_name": "get_weather", "tool_call_id": "call_1"}]}`)
	if status != 200 {
		t.Fatalf("history: status %d: %v", status, objs)
	}
	prompt := s.text(s.last(t).Prompt)
	for _, want := range []string{"<tool_call>\n" + `{"name": "get_weather", "arguments": {"city": "Paris"}}`, "<tool_response>\n18 C\n</tool_response>"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the conversation renders as %q, without %q", prompt, want)
		}
	}

	// The same with Qwen3's template, which reads the content of the
	// assistant's message as a string: Ollama's is "", never None.
	q := newScripted(t, qwen3, server.Config{})
	q.say(messages.FinishStop, "It is 18 C.")
	status, _, objs = ollamaDo(t, "POST", q.url+"/api/chat", `{"model": "stories", "stream": false, `+weatherTools+`, "messages": [
		{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": "", "thinking": "Paris.", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
		{"role": "tool", "content": "18 C", "tool_name": "get_weather"}]}`)
	if status != 200 {
		t.Fatalf("history, qwen3: status %d: %v", status, objs)
	}
	if p := q.text(q.last(t).Prompt); !strings.Contains(p, "<tool_call>\n"+`{"name": "get_weather", "arguments": {"city": "Paris"}}`) {
		t.Errorf("history, qwen3: the conversation renders as %q", p)
	}

	// What the tools cannot be: a 400 in Ollama's shape.
	status, _, objs = ollamaDo(t, "POST", s.url+"/api/chat", ollamaChatBody(`, "tools": [{"type": "retrieval"}]`))
	if msg, _ := objs[0]["error"].(string); status != 400 || !strings.Contains(msg, "retrieval") {
		t.Errorf("a tool that is not a function: %d %v", status, objs)
	}
}

// TestOllamaThinking: think, as Ollama has it. A template that reasons
// thinks unless think is false (unset is true: enable_thinking true);
// the reasoning comes back in message.thinking or thinking, streamed
// apart from the content. A level sets gpt-oss's reasoning_effort ("max"
// is "high"). A prompt that opens the reasoning block (DeepSeek R1's) makes
// the output begin in it, unless a format constrains the output.
func TestOllamaThinking(t *testing.T) {
	const (
		thought = "<think>\nParis is in France.\n</think>\n\nIt is sunny."
		harmony = "<|channel|>analysis<|message|>Paris is in France.<|end|><|start|>assistant<|channel|>final<|message|>It is sunny."
		noThink = "<think>\n\n</think>\n\n" // Qwen3's prompt with enable_thinking false
	)
	split := ollamaAnswer{thinking: "Paris is in France.", content: "It is sunny."}
	for _, tc := range []struct {
		name, template, path string
		extra                string // more fields
		pieces               []string
		want                 ollamaAnswer
		prompt               func(string) bool // checks the rendered prompt
	}{
		{"unset thinks", qwen3, "/api/chat", "", []string{thought}, split,
			func(p string) bool { return !strings.HasSuffix(p, noThink) }},
		{"true", qwen3, "/api/chat", `, "think": true`, []string{"<think>\nParis", " is in France.\n</", "think>\n\nIt is", " sunny."}, split,
			func(p string) bool { return !strings.HasSuffix(p, noThink) }},
		{"false", qwen3, "/api/chat", `, "think": false`, []string{"It is sunny."}, ollamaAnswer{content: "It is sunny."},
			func(p string) bool { return strings.HasSuffix(p, noThink) }},
		{"a level where the template has none", qwen3, "/api/chat", `, "think": "low"`, []string{thought}, split, nil},
		{"generate", qwen3, "/api/generate", "", []string{thought}, split, nil},
		{"generate think false", qwen3, "/api/generate", `, "think": false`, []string{"It is sunny."}, ollamaAnswer{content: "It is sunny."},
			func(p string) bool { return strings.HasSuffix(p, noThink) }},
		{"thinking then a call", qwen3, "/api/chat", ", " + weatherTools, []string{"<think>\nParis.\n</think>\n\n", weatherCall},
			ollamaAnswer{thinking: "Paris.", calls: []string{`call_ 0 get_weather {"city":"Paris"}`}}, nil},
		{"gpt-oss", gptOSS, "/api/chat", "", []string{harmony}, split,
			func(p string) bool { return strings.Contains(p, "Reasoning: medium") }},
		{"gpt-oss high", gptOSS, "/api/chat", `, "think": "high"`, []string{harmony}, split,
			func(p string) bool { return strings.Contains(p, "Reasoning: high") }},
		{"gpt-oss max", gptOSS, "/api/generate", `, "think": "max"`, []string{harmony}, split,
			func(p string) bool { return strings.Contains(p, "Reasoning: high") }},
		{"gpt-oss low", gptOSS, "/api/chat", `, "think": "low"`, []string{harmony}, split,
			func(p string) bool { return strings.Contains(p, "Reasoning: low") }},
		{"prompt opens the reasoning", r1Distill, "/api/chat", "", []string{"Paris is in France.\n</think>\n\nIt is sunny."}, split,
			func(p string) bool { return strings.HasSuffix(p, "<think>\n") }},
		{"a format after an open reasoning block", r1Distill, "/api/chat", `, "format": "json"`, []string{`{"sunny": true}`}, ollamaAnswer{content: `{"sunny": true}`}, nil},
		{"a model that does not think", qwen25, "/api/chat", "", []string{thought}, ollamaAnswer{content: thought}, nil},
	} {
		s := newScripted(t, tc.template, server.Config{})
		s.say(messages.FinishStop, tc.pieces...)
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream %v", tc.name, stream), func(t *testing.T) {
				body := ollamaChatBody(fmt.Sprintf(`, "stream": %v%s`, stream, tc.extra))
				if tc.path == "/api/generate" {
					body = fmt.Sprintf(`{"model": "stories", "prompt": "Weather in Paris?", "stream": %v%s}`, stream, tc.extra)
				}
				objs := checkAnswer(t, s.url+tc.path, body, stream, tc.want)
				if p := s.text(s.last(t).Prompt); tc.prompt != nil && !tc.prompt(p) {
					t.Errorf("the prompt ends %q", p[max(0, len(p)-200):])
				}
				if stream && tc.want.thinking != "" { // thinking streams first
					first := objs[0]
					if m, ok := first["message"].(map[string]any); ok {
						first = m
					}
					if first["thinking"] == nil {
						t.Errorf("the first object %v is not thinking", objs[0])
					}
				}
			})
		}
	}

	// A model that does not think: think true or a level is Ollama's 400.
	s := newScripted(t, qwen25, server.Config{})
	for _, body := range []string{ollamaChatBody(`, "think": true`), `{"model": "stories", "prompt": "x", "think": "high"}`} {
		path := "/api/chat"
		if strings.Contains(body, "prompt") {
			path = "/api/generate"
		}
		status, _, objs := ollamaDo(t, "POST", s.url+path, body)
		if status != 400 || len(objs) != 1 || objs[0]["error"] != `"stories" does not support thinking` {
			t.Errorf("%s %s: %d %v", path, body, status, objs)
		}
	}
}

// TestOllamaCapabilities: /api/show lists "completion", "tools" where the
// chat template renders tools in a format troupe parses, and "thinking"
// where it reasons apart from its answer.
func TestOllamaCapabilities(t *testing.T) {
	f := newFixture(t, options{})
	for _, tc := range []struct {
		template string
		want     []string
	}{
		{"HuggingFaceTB-SmolLM2-135M-Instruct.jinja", []string{"completion"}},
		{qwen25, []string{"completion", "tools"}},
		{"mistralai-Mistral-Nemo-Instruct-2407.jinja", []string{"completion", "tools"}},
		{"fireworks-ai-llama-3-firefunction-v2.jinja", []string{"completion", "tools"}},        // tools in its own variable
		{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", []string{"completion", "tools"}}, // fails without tools
		{r1Distill, []string{"completion", "thinking"}},
		{qwen3, []string{"completion", "tools", "thinking"}},
		{gptOSS, []string{"completion", "tools", "thinking"}},
		{"../templates-more/mistralai-Ministral-3-14B-Reasoning-2512.jinja", []string{"completion", "tools", "thinking"}},
		{"../templates-more/Mistral-Small-3.2-24B-Instruct-2506.jinja", []string{"completion", "tools"}},
	} {
		t.Run(filepath.Base(tc.template), func(t *testing.T) {
			srv, err := server.New(f.srv.System(), f.rt, server.Config{ModelName: modelName, ChatTemplate: servetest.Template(t, tc.template)})
			if err != nil {
				t.Fatal(err)
			}
			srv.Script(func(*messages.GenerateRequest) ([]string, string) { return []string{"Sunny."}, messages.FinishStop })
			srv.Ready()
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()
			status, _, objs := ollamaDo(t, "POST", ts.URL+"/api/show", `{"model": "stories"}`)
			if status != 200 {
				t.Fatalf("status %d: %v", status, objs)
			}
			var got []string
			for _, c := range objs[0]["capabilities"].([]any) {
				got = append(got, c.(string))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("capabilities %v, want %v", got, tc.want)
			}
			// Tools on a model without the capability: Ollama's 400.
			status, _, objs = ollamaDo(t, "POST", ts.URL+"/api/chat", ollamaChatBody(`, "stream": false, `+describedTools))
			refused := status == 400 && objs[0]["error"] == `"stories" does not support tools`
			if refused == slices.Contains(tc.want, "tools") {
				t.Errorf("tools: status %d %v", status, objs)
			}
		})
	}
}
