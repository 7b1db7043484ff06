package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unclosed block", "{% if x %}never closed", "if"},
		{"unclosed output", "{{ messages[0].content ", "parse template"},
		{"bad expression", "{{ 1 + }}", "parse template"},
		{"unknown statement", "{% frobnicate %}", "frobnicate"},
		{"include", "{% include 'other.jinja' %}", "include"},
		// jinja2 accepts these; we refuse them rather than render them wrong.
		{"with", "{% with x = 1 %}{{ x }}{% endwith %}", "with"},
		{"tuple set", "{% set a, b = 1, 2 %}", "set"},
		{"unterminated string", "{{ 'abc }}", "parse template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl, err := Parse(tc.src)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded: %+v", tc.src, tpl)
			}
			if errors.Is(err, ErrNoTemplate) || !strings.HasPrefix(err.Error(), "chat: parse template") ||
				!strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q): %v, want a parse error mentioning %q", tc.src, err, tc.want)
			}
			if strings.Count(err.Error(), tc.src) > 0 && len(tc.src) > 20 {
				t.Errorf("error repeats the template source: %v", err)
			}
		})
	}
}

func TestNoTemplate(t *testing.T) {
	for _, src := range []string{"", " \n\t"} {
		if _, err := Parse(src); !errors.Is(err, ErrNoTemplate) {
			t.Errorf("Parse(%q): %v, want ErrNoTemplate", src, err)
		}
	}
	var tpl *Template
	if _, err := tpl.Render([]Message{{Role: "user", Content: "hi"}}, Options{}); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("nil template Render: %v, want ErrNoTemplate", err)
	}
}

func mustParse(t *testing.T, src string) *Template {
	t.Helper()
	tpl, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func TestRenderErrors(t *testing.T) {
	tpl := mustParse(t, `{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}`+
		`{{ messages[0].content + messages|length }}`)
	_, err := tpl.Render([]Message{{Role: "system", Content: "x"}}, Options{})
	var te *TemplateError
	if !errors.As(err, &te) || te.Message != "System role not supported" {
		t.Errorf("raise_exception: %v, want TemplateError", err)
	}
	_, err = tpl.Render([]Message{{Role: "user", Content: "x"}}, Options{})
	var re *RenderError
	if !errors.As(err, &re) || re.Line != 1 || !strings.HasPrefix(re.Msg, "TypeError: can only concatenate str") {
		t.Errorf("str + int: %v (%#v), want a RenderError naming the TypeError at line 1", err, re)
	}
	// The source fixes (a nested conditional over three lines) keep lines.
	tpl = mustParse(t, "{{ 'x' ~ ('a'\n if true\n else 'b') }}\n{{ 'a' + 1 }}")
	if _, err = tpl.Render(nil, Options{}); !errors.As(err, &re) || re.Line != 4 {
		t.Errorf("error on line 4 reported as %v", err)
	}
}

// TestKeyOrder: tools and kwargs given as JSON keep their key order through
// tojson; a Go map has none, so its keys come sorted.
func TestKeyOrder(t *testing.T) {
	tpl := mustParse(t, `{{ tools|tojson }}|{{ extra|default({})|tojson }}|`+
		`{% for m in messages %}{% for c in m.tool_calls %}{{ c.function.arguments|tojson }}{% endfor %}{% endfor %}`)
	msgs := []Message{{Role: "assistant", ToolCalls: []ToolCall{{ID: "1", Function: FunctionCall{Name: "f", Arguments: `{"z": 1, "a": 2.0}`}}}}}
	got, err := tpl.Render(msgs, Options{
		Tools: []any{json.RawMessage(`{"z": 1, "a": [true, null, 1.5e3]}`), map[string]any{"z": 1, "a": "x"}},
		Extra: map[string]any{"extra": json.RawMessage(`{"y": "é", "b": {}}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"z": 1, "a": [true, null, 1500.0]}, {"a": "x", "z": 1}]|{"y": "é", "b": {}}|{"z": 1, "a": 2.0}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if !tpl.objectArguments {
		t.Error("a template that prints arguments with tojson should get them as an object")
	}
	msgs[0].ToolCalls[0].Function.Arguments = "{not json"
	if _, err := tpl.Render(msgs, Options{}); err == nil {
		t.Error("invalid JSON arguments for an object-arguments template: no error")
	}
}

// TestMessageShape: optional keys are absent when unset, an assistant's
// empty content beside tool calls is None, arguments are an object for a
// template that prints them with tojson, and Extra cannot replace the
// standard variables.
func TestMessageShape(t *testing.T) {
	tpl := mustParse(t, `{% for m in messages %}{{ m|tojson }};{% endfor %}{{ bos_token }}{{ add_generation_prompt }}`)
	got, err := tpl.Render([]Message{
		{Role: "user", Content: "hi", Name: "ann"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Function: FunctionCall{Name: "f", Arguments: `{}`}}}},
		{Role: "tool", Content: "ok", ToolCallID: "c1"},
	}, Options{BOSToken: "<s>", Extra: map[string]any{"bos_token": "X", "add_generation_prompt": true}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role": "user", "content": "hi", "name": "ann"};` +
		`{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {}}}]};` +
		`{"role": "tool", "content": "ok", "tool_call_id": "c1"};<s>False`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestConcurrentRender renders one template from many goroutines (run with
// -race).
func TestConcurrentRender(t *testing.T) {
	g := loadGolden(t)
	src := g.Templates["meetkai-functionary-medium-v3.2"].Source
	tpl := mustParse(t, src)
	conv := g.Conversations["tools"]
	var tools []any
	for _, tool := range conv.Tools {
		tools = append(tools, tool)
	}
	want, err := tpl.Render(conv.Messages, Options{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				got, err := tpl.Render(conv.Messages, Options{Tools: tools})
				if err != nil || got != want {
					errs <- fmt.Errorf("concurrent render differs (err %v)", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestRecursionAndRangeLimits(t *testing.T) {
	for _, src := range []string{
		`{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`,
		`{% for i in range(1000000) %}{% endfor %}`,
	} {
		if _, err := mustParse(t, src).Render(nil, Options{}); err == nil {
			t.Errorf("%s: no error", src)
		}
	}
}

// BenchmarkRender renders Llama 3.1's template (tools in the first user
// message, a tool call and its result).
func BenchmarkRender(b *testing.B) {
	data, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		b.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		b.Fatal(err)
	}
	tpl, err := Parse(g.Templates["meta-llama-Llama-3.1-8B-Instruct"].Source)
	if err != nil {
		b.Fatal(err)
	}
	conv := g.Conversations["tools"]
	var tools []any
	for _, tool := range conv.Tools {
		tools = append(tools, tool)
	}
	for b.Loop() {
		if _, err := tpl.Render(conv.Messages, Options{Tools: tools, AddGenerationPrompt: true}); err != nil {
			b.Fatal(err)
		}
	}
}
