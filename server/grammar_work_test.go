package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/internal/schematest"
	"github.com/troupe-llm/troupe/server"
)

// TestSchemaWorkAPI: through the API, the nested type-list schema compiles
// with work linear in its size (the runtime's schema counters), in
// response_format and in a tool's parameters under tool_choice
// "required"; a schema past the work bound is a 400 naming its field,
// within the bound's work.
func TestSchemaWorkAPI(t *testing.T) {
	s := newScripted(t, "Qwen-Qwen2.5-7B-Instruct.jinja", server.Config{})
	nested := schematest.NestedTypeLists(18)
	tool := func(params string) string {
		return `{"type": "function", "function": {"name": "f", "parameters": ` + params + `}}`
	}
	for _, tc := range []struct {
		name, body string
		param      string // of the 400; "" for a success
		maxNodes   int64
	}{
		{"response_format", `{` + userHi + `, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": ` + nested + `}}}`, "", 200},
		{"tools required", `{` + userHi + `, "tools": [` + tool(`{"type": "object"}`) + `, ` + tool(nested) + `], "tool_choice": "required"}`, "", 400},
		{"response_format past the bound", `{` + userHi + `, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": ` + schematest.FanOut() + `}}}`,
			"response_format", grammar.MaxSchemaNodes + 1},
		{"tools past the bound", `{` + userHi + `, "tools": [` + tool(`{"type": "object"}`) + `, ` + tool(schematest.FanOut()) + `], "tool_choice": {"type": "function", "function": {"name": "f"}}}`,
			"tools[1].function.parameters", grammar.MaxSchemaNodes + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.say("stop", "[]")
			before := s.rt.GrammarStats().SchemaNodes
			resp, body := post(t, s.url+"/v1/chat/completions", tc.body)
			nodes := s.rt.GrammarStats().SchemaNodes - before
			if nodes > tc.maxNodes || nodes == 0 {
				t.Errorf("%d schema nodes visited, want 1..%d", nodes, tc.maxNodes)
			}
			if tc.param == "" {
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				return
			}
			var e struct {
				Error struct {
					Message string
					Param   *string
				}
			}
			json.Unmarshal(body, &e)
			if resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != tc.param || !strings.Contains(e.Error.Message, "too complex") {
				t.Fatalf("%d %s; want a 400 about %s saying too complex", resp.StatusCode, body, tc.param)
			}
		})
	}
}

// TestGrammarFailsMidway: a grammar whose masks pass grammar's work
// bound only some tokens in (after "xxxxxxx": stories260K has no "xx"
// token) ends its choice with an error naming it; with nothing sent yet
// (not streamed) that is a 400 naming the grammar's field, not a 500.
func TestGrammarFailsMidway(t *testing.T) {
	f := newFixture(t, options{})
	src := `root ::= "xxxxxxxx" ` + strings.Repeat(`("a" | "") `, 3000)
	body, _ := json.Marshal(map[string]any{"prompt": "Once", "max_tokens": 20, "grammar": src})
	resp, b := post(t, f.url+"/v1/completions", string(body))
	var e struct {
		Error struct {
			Message string
			Type    string
			Param   *string
		}
	}
	json.Unmarshal(b, &e)
	if resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != "grammar" || !strings.Contains(e.Error.Message, "too complex") {
		t.Fatalf("%d %s; want a 400 about grammar saying too complex", resp.StatusCode, b)
	}
	// Streamed, the text before the error has been sent: the choice ends
	// with an error event naming the grammar.
	body, _ = json.Marshal(map[string]any{"prompt": "Once", "max_tokens": 20, "grammar": src, "stream": true})
	resp, b = post(t, f.url+"/v1/completions", string(body))
	if resp.StatusCode != 200 || !strings.Contains(string(b), "too complex") || strings.Count(string(b), `"text":"x"`) == 0 {
		t.Fatalf("stream: %d %s; want the x's, then an error event saying too complex", resp.StatusCode, b)
	}
}
