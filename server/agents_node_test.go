package server_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server"
)

// TestNodeAgentClients drives /v1/responses, /v1/messages and the chat
// route's tool loop with the official npm clients, unchanged: openai's
// responses.create and responses.stream (text, tools, json_schema,
// previous_response_id), chat.completions.runTools with tool_choice
// required, @openai/agents running a tool loop, and @anthropic-ai/sdk's
// messages.create, messages.stream, tools and countTokens. The model's
// output is scripted: a weather call where tools are offered (or forced),
// an answer once the tool's result is in the conversation.
func TestNodeAgentClients(t *testing.T) {
	mods := nodeModules(t, "openai", "@openai/agents", "@anthropic-ai/sdk", "zod")
	s := newScripted(t, qwen25, server.Config{})
	s.srv.Script(func(req *messages.GenerateRequest) ([]string, string) {
		p := s.text(req.Prompt)
		switch {
		case req.Grammar != nil && req.Grammar.Kind == messages.GrammarGBNF:
			return []string{"<tool_call>\n{\"name\": \"get_weather\", ", `"arguments": {"city": "Paris"}}` + "\n</tool_call>"}, messages.FinishStop
		case req.Grammar != nil:
			return []string{`{"city": `, `"Paris"}`}, messages.FinishStop
		case strings.Contains(p, "<tool_response>"):
			return []string{"It is ", "sunny."}, messages.FinishStop
		case strings.Contains(p, "<tools>"):
			return []string{"<tool_call>\n{\"name\": \"get_weather\", ", `"arguments": {"city": "Paris"}}` + "\n</tool_call>"}, messages.FinishStop
		}
		return []string{"Hello ", "there."}, messages.FinishStop
	})
	var got map[string]any
	runNode(t, mods, "testdata/agents-client.cjs", &got, s.url)
	want := map[string]string{
		"responsesText":        `{"id":"*","status":"completed","text":"Hello there."}`,
		"responsesLoop":        `{"answer":"It is sunny.","call":"get_weather {\"city\": \"Paris\"}"}`,
		"responsesStream":      `{"deltas":"Hello there.","status":"completed","text":"Hello there."}`,
		"responsesStreamTools": `{"args":"{\"city\": \"Paris\"}","call":"get_weather {\"city\": \"Paris\"}"}`,
		"responsesSchema":      `{"city":"Paris"}`,
		"responsesBad":         `{"error":"*previous_response_id*","status":400}`,
		"runTools":             `{"calls":3,"finish":"tool_calls"}`,
		"agent":                `{"calls":1,"final":"It is sunny."}`,
		"messagesText":         `{"stop":"end_turn","text":"Hello there.","usage":2}`,
		"messagesStream":       `{"deltas":"Hello there.","stop":"end_turn","text":"Hello there."}`,
		"messagesTools":        `{"answer":"It is sunny.","call":"get_weather {\"city\":\"Paris\"}","stop":"tool_use"}`,
		"messagesStreamTool":   `{"call":"get_weather {\"city\":\"Paris\"}","stop":"tool_use"}`,
		"countTokens":          `*`,
		"messagesBad":          `{"error":"*image*","status":400}`,
	}
	for name, w := range want {
		b, _ := json.Marshal(got[name])
		if !match(w, string(b)) {
			t.Errorf("%s: %s\nwant %s", name, b, w)
		}
	}
	if n, ok := got["countTokens"].(float64); !ok || n < 5 {
		t.Errorf("countTokens %v", got["countTokens"])
	}
}

// match reports whether s matches pattern, whose * matches any text.
func match(pattern, s string) bool {
	re := "(?s)^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
	return regexp.MustCompile(re).MatchString(s)
}
