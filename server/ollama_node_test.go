package server_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server"
)

// TestNodeOllamaClient drives the /api routes with the official npm ollama
// client: generate and chat, streamed and not, list, show, ps, version, an
// unknown model, a stream the client aborts, embed; greedy output equals
// llama.cpp's. On a second server, whose template has tools and thinking
// and whose output is scripted: a tool call, streamed and not, the answer
// to the tool's result, thinking on generate.
func TestNodeOllamaClient(t *testing.T) {
	mods := nodeModules(t, "ollama")
	f := newFixture(t, options{})
	rc := loadCases(t)[0]
	ts := newScripted(t, qwen3, server.Config{})
	ts.srv.Script(func(req *messages.GenerateRequest) ([]string, string) {
		switch p := ts.text(req.Prompt); {
		case strings.Contains(p, "<tool_response>\n18 C in Paris\n</tool_response>"):
			return []string{"<think>\nThe tool answered.\n</think>\n\n", "It is 18 C", " in Paris."}, messages.FinishStop
		case strings.Contains(p, "<tools>"):
			return []string{"<think>\nParis is in France.\n</think>\n\n", "<tool_call>\n{\"name\": \"get_weather\", ", `"arguments": {"city": "Paris"}}` + "\n</tool_call>"}, messages.FinishStop
		}
		return []string{"<think>\nA greeting.\n</think>\n\n", "Hello!"}, messages.FinishStop
	})
	var got nodeOllamaResult
	runNode(t, mods, "testdata/ollama-client.cjs", &got, f.url, modelName, rc.Prompt, strconv.Itoa(len(rc.GreedyIDs)), ts.url)
	checkNodeOllama(t, f, rc, &got)
	checkNodeOllamaTools(t, &got)
	f.waitIdle(t)
}

// nodeOllamaFinal is the last object of a generate, as the npm client
// returns it.
type nodeOllamaFinal struct {
	Done            bool   `json:"done"`
	DoneReason      string `json:"done_reason"`
	EvalCount       int    `json:"eval_count"`
	PromptEvalCount int    `json:"prompt_eval_count"`
	TotalDuration   int64  `json:"total_duration"`
}

// nodeOllamaResult is what testdata/ollama-client.cjs prints.
type nodeOllamaResult struct {
	Generate, GenerateStreamed, Chat, ChatStreamed, ChatRole, Version string
	GenerateFinal, GenerateStreamedFinal                              nodeOllamaFinal
	GenerateParts                                                     int
	List                                                              []struct{ Name, Family string }
	Show                                                              struct {
		Family, Arch string
		Capabilities []string
	}
	Ps []struct {
		Name          string
		ContextLength int `json:"context_length"`
	}
	Error *struct {
		Name, Message string
		Status        int
	}
	Aborted bool
	Embed   *struct{ Count, Dim int }

	ToolChat         toolAnswer
	ToolChatStreamed struct {
		toolAnswer
		Parts int
	}
	ToolFollow    struct{ Thinking, Content string }
	ThinkGenerate struct{ Thinking, Response string }
	ToolShow      []string
}

// checkNodeOllama checks the first server's answers: generate and chat
// against llama.cpp's greedy output, list, show, ps, version, the unknown
// model's error, the aborted stream and embed.
func checkNodeOllama(t *testing.T, f *fixture, rc refCase, got *nodeOllamaResult) {
	t.Helper()
	want := f.text(rc.GreedyIDs)
	if got.Generate != want || got.GenerateStreamed != want {
		t.Errorf("generate %q, streamed %q; want %q", got.Generate, got.GenerateStreamed, want)
	}
	if g := got.GenerateFinal; !g.Done || g.DoneReason != "length" || g.EvalCount != len(rc.GreedyIDs) || g.PromptEvalCount != len(rc.PromptIDs) || g.TotalDuration <= 0 {
		t.Errorf("generate's final object %+v", g)
	}
	if g := got.GenerateStreamedFinal; !g.Done || g.EvalCount != len(rc.GreedyIDs) || got.GenerateParts < 3 {
		t.Errorf("streamed generate: %d parts, the last %+v", got.GenerateParts, g)
	}
	if got.Chat == "" || got.ChatStreamed != got.Chat || got.ChatRole != "assistant" {
		t.Errorf("chat %q (role %q), streamed %q", got.Chat, got.ChatRole, got.ChatStreamed)
	}
	if len(got.List) != 1 || got.List[0].Name != "stories:latest" || got.List[0].Family != "llama" {
		t.Errorf("list %+v", got.List)
	}
	if got.Show.Family != "llama" || got.Show.Arch != "llama" || len(got.Show.Capabilities) == 0 {
		t.Errorf("show %+v", got.Show)
	}
	if len(got.Ps) != 1 || got.Ps[0].Name != "stories:latest" || got.Ps[0].ContextLength != f.rt.MaxModelLen() {
		t.Errorf("ps %+v", got.Ps)
	}
	if got.Version == "" {
		t.Error("no version")
	}
	if e := got.Error; e == nil || e.Name != "ResponseError" || e.Status != 404 || e.Message != "model 'nope' not found" {
		t.Errorf("error %+v", got.Error)
	}
	if !got.Aborted {
		t.Error("the aborted stream did not end with an AbortError")
	}
	if got.Embed == nil || got.Embed.Count != 2 || got.Embed.Dim != f.m.Config.Dim {
		t.Errorf("embed %+v", got.Embed)
	}
}

// checkNodeOllamaTools checks the scripted server's answers: the tool call,
// streamed and not, the answer to its result, thinking and capabilities.
func checkNodeOllamaTools(t *testing.T, got *nodeOllamaResult) {
	t.Helper()
	call := `{"function":{"arguments":{"city":"Paris"},"index":0,"name":"get_weather"},"id":"call_"}` // keys sorted
	for _, a := range []struct {
		name string
		toolAnswer
	}{{"tool call", got.ToolChat}, {"tool call, streamed", got.ToolChatStreamed.toolAnswer}} {
		if a.Thinking != "Paris is in France." || a.Content != "" || len(a.Calls) != 1 || a.calls() != call {
			t.Errorf("%s: thinking %q, content %q, calls %s; want thinking, no content, %s", a.name, a.Thinking, a.Content, a.calls(), call)
		}
	}
	if got.ToolChat.DoneReason != "stop" || got.ToolChatStreamed.Parts < 3 {
		t.Errorf("tool call: done_reason %q; streamed in %d parts", got.ToolChat.DoneReason, got.ToolChatStreamed.Parts)
	}
	if got.ToolFollow.Thinking != "The tool answered." || got.ToolFollow.Content != "It is 18 C in Paris." {
		t.Errorf("after the tool's answer: %+v", got.ToolFollow)
	}
	if got.ThinkGenerate.Thinking != "A greeting." || got.ThinkGenerate.Response != "Hello!" {
		t.Errorf("generate with think: %+v", got.ThinkGenerate)
	}
	if !slices.Equal(got.ToolShow, []string{"completion", "tools", "thinking"}) {
		t.Errorf("capabilities %v", got.ToolShow)
	}
}

// toolAnswer is a message with tool calls, as the npm client returns it.
type toolAnswer struct {
	Thinking, Content string
	Calls             []json.RawMessage
	DoneReason        string `json:"done_reason"`
}

// calls writes the calls compactly, each id "call_" when it is one.
func (a toolAnswer) calls() string {
	var out []string
	for _, c := range a.Calls {
		var call map[string]any
		if json.Unmarshal(c, &call) != nil {
			return string(c)
		}
		if id, _ := call["id"].(string); strings.HasPrefix(id, "call_") {
			call["id"] = "call_"
		}
		b, _ := json.Marshal(call)
		out = append(out, string(b))
	}
	return strings.Join(out, ",")
}
