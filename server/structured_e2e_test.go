package server_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/server"
	"github.com/troupe-llm/troupe/server/servetest"
)

// TestConstrainedEndToEnd samples stories260K at temperature 1 under each
// kind of constraint; every output must obey it.
//
// END TO END: it needs the runtime to apply grammar masks (the grammar
// runtime work of issue 18). A runtime that ignores GenerateRequest.Grammar
// is detected by the first check (choices) and the test is skipped,
// saying so; once the runtime masks, the skip never happens.
func TestConstrainedEndToEnd(t *testing.T) {
	f := newFixture(t, options{srv: server.Config{ChatTemplate: servetest.Template(t, "Qwen-Qwen2.5-7B-Instruct.jinja")}})
	type choice struct {
		Text         string
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Content   *string
			ToolCalls []struct {
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		}
	}
	run := func(url, body string) []choice {
		t.Helper()
		resp, out := post(t, f.url+url, body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, out)
		}
		var r struct{ Choices []choice }
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		return r.Choices
	}
	const sampling = `"n": 4, "temperature": 1, "seed": 7, "max_tokens": 120`

	for _, c := range run("/v1/completions", `{"prompt": "Is it good?", "guided_choice": ["yes", "no"], `+sampling+`}`) {
		if c.Text != "yes" && c.Text != "no" {
			t.Errorf("guided_choice: output %q is neither choice", c.Text)
		}
	}
	for _, c := range run("/v1/chat/completions", `{"messages": [{"role": "user", "content": "A pet?"}], `+sampling+`,
		"response_format": {"type": "json_schema", "json_schema": {"name": "pet", "strict": true, "schema": {"type": "object",
			"properties": {"kind": {"enum": ["cat", "dog"]}, "legs": {"type": "integer", "minimum": 0, "maximum": 8}},
			"required": ["kind", "legs"], "additionalProperties": false}}}}`) {
		var pet struct {
			Kind string
			Legs *int
		}
		if c.FinishReason != "stop" || json.Unmarshal([]byte(*c.Message.Content), &pet) != nil || (pet.Kind != "cat" && pet.Kind != "dog") ||
			pet.Legs == nil || *pet.Legs < 0 || *pet.Legs > 8 {
			t.Errorf("json_schema: %q (finish %s)", *c.Message.Content, c.FinishReason)
		}
	}
	for _, toolChoice := range []string{`"required"`, `{"type": "function", "function": {"name": "get_time"}}`} {
		for _, c := range run("/v1/chat/completions", `{"messages": [{"role": "user", "content": "Weather?"}], `+sampling+`,
			"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
				"properties": {"unit": {"enum": ["C", "F"]}}, "required": ["unit"]}}},
				{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}}],
			"parallel_tool_calls": false, "tool_choice": `+toolChoice+`}`) {
			calls := c.Message.ToolCalls
			if c.FinishReason != "tool_calls" || len(calls) != 1 || !slices.Contains([]string{"get_weather", "get_time"}, calls[0].Function.Name) ||
				toolChoice != `"required"` && calls[0].Function.Name != "get_time" || !json.Valid([]byte(calls[0].Function.Arguments)) {
				t.Errorf("tool_choice %s: %q, calls %+v (finish %s)", toolChoice, *c.Message.Content, c.Message.ToolCalls, c.FinishReason)
			}
		}
	}
}
