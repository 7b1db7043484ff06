package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

func messageValues(messages []Message, objectArgs bool) (list, error) {
	out := make(list, len(messages))
	for i, m := range messages {
		d := dict{}
		d.set("role", m.Role)
		if m.Content == "" && len(m.ToolCalls) > 0 && !m.StringContent {
			d.set("content", none)
		} else {
			d.set("content", m.Content)
		}
		if m.Name != "" {
			d.set("name", m.Name)
		}
		if len(m.ToolCalls) > 0 {
			calls := make(list, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				var args any = c.Function.Arguments
				if objectArgs {
					v, err := decodeJSON([]byte(c.Function.Arguments))
					if err != nil {
						return nil, fmt.Errorf("chat: message %d: tool call %d: arguments: %w", i, j, err)
					}
					args = v
				}
				typ := c.Type
				if typ == "" {
					typ = "function"
				}
				f := dict{}
				f.set("name", c.Function.Name)
				f.set("arguments", args)
				call := dict{}
				call.set("id", c.ID)
				call.set("type", typ)
				call.set("function", f)
				calls[j] = call
			}
			d.set("tool_calls", calls)
		}
		if m.ToolCallID != "" {
			d.set("tool_call_id", m.ToolCallID)
		}
		if m.Reasoning != "" {
			d.set("reasoning_content", m.Reasoning)
			d.set("thinking", m.Reasoning)
		}
		out[i] = d
	}
	return out, nil
}

func toolValues(tools []any) (any, error) {
	if tools == nil {
		return none, nil
	}
	out := make(list, len(tools))
	for i, tool := range tools {
		v, err := toPy(tool)
		if err != nil {
			return nil, fmt.Errorf("chat: tool %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

// Probe for rendersArguments, as llama.cpp's minja probes a template's
// capabilities: one tool call whose arguments hold argument_needle.
var (
	probeTools = []any{json.RawMessage(`{"type": "function", "function": {"name": "ipython",
		"description": "Runs code", "parameters": {"type": "object", "properties":
		{"code": {"type": "string", "description": "The code"}}, "required": ["code"]}}}`)}
	probeMessages = []Message{
		{Role: "user", Content: "Hey"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call00001", Type: "function", Function: FunctionCall{
			Name: "ipython", Arguments: `{"argument_needle": "print('Hello, World!')"}`}}}},
	}
)

// rendersArguments reports whether the template shows the probe call's
// arguments as JSON, or as Qwen3-Coder's XML parameters, when they are
// passed as text (objectArgs false) or as an object (its message's content
// as NeedsStringContent says). The marks are minja's.
func (t *Template) rendersArguments(objectArgs bool) bool {
	msgs := slices.Clone(probeMessages)
	msgs[1].StringContent = t.stringContent
	out, err := t.render(msgs, Options{Tools: probeTools}, objectArgs)
	return err == nil && (strings.Contains(out, `"argument_needle":`) || strings.Contains(out, `'argument_needle':`) ||
		strings.Contains(out, `<parameter=argument_needle>`))
}

// probe finds how the template must be fed, as llama.cpp's minja probes
// a template's capabilities, each probe a render: whether a call's empty
// content must be "" (stringContent), its arguments an object, a tool's
// description present. A template that runs past its limits (a hostile
// one) is not probed further: each probe would cost a whole budget.
func (t *Template) probe() {
	renders := func(msgs []Message, o Options, objectArgs bool) (ok, limit bool) {
		_, err := t.render(msgs, o, objectArgs)
		var re *RenderError
		limit = errors.As(err, new(*BudgetError)) ||
			errors.As(err, &re) && (strings.HasPrefix(re.Msg, "RuntimeError: ") || strings.HasPrefix(re.Msg, "MemoryError: "))
		return err == nil, limit
	}
	call := func(stringContent bool) (ok, limit bool) { // the probe call, its arguments as text or as an object
		msgs := slices.Clone(probeMessages)
		msgs[1].StringContent = stringContent
		for _, objectArgs := range []bool{false, true} {
			if ok, limit = renders(msgs, Options{Tools: probeTools}, objectArgs); ok || limit {
				return ok, limit
			}
		}
		return false, false
	}
	ok, limit := call(false)
	if limit {
		return
	}
	if !ok {
		t.stringContent, _ = call(true)
	}
	t.objectArguments = !t.rendersArguments(false) && t.rendersArguments(true)
	if bare, _ := renders(probeMessages[:1], Options{Tools: probeBareTool}, t.objectArguments); !bare {
		t.toolDescription, _ = renders(probeMessages[:1], Options{Tools: probeBareTool, ToolDescriptions: true}, t.objectArguments)
	}
}

// probeBareTool is a tool as clients often send it: no description.
var probeBareTool = []any{json.RawMessage(`{"type": "function", "function": {"name": "ipython",
	"parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}`)}

// NeedsToolDescription reports whether the template fails on a tool whose
// function has no description (jinja2 raises on gpt-oss's "// " +
// tool.description) but renders it with an empty one: a server then sets
// Options.ToolDescriptions, so that such tools render as llama.cpp renders
// them.
func (t *Template) NeedsToolDescription() bool { return t != nil && t.toolDescription }

// describeTools gives each tool's function that has no description an
// empty one.
func describeTools(tools any) {
	l, _ := tools.(list)
	for _, tool := range l {
		d, _ := tool.(dict)
		if d == nil {
			continue
		}
		fn, _ := d.lookup("function")
		if f, ok := fn.(dict); ok {
			if _, has := f.lookup("description"); !has {
				f.set("description", "")
			}
		}
	}
}

// NeedsStringContent reports whether the template fails on an assistant
// message with tool calls and no content when that content is None (as
// OpenAI's clients send it, and Render passes it) but renders it as "".
// A server then sets Message.StringContent, as llama.cpp gives such
// templates "" (its requires_non_null_content workaround).
func (t *Template) NeedsStringContent() bool { return t != nil && t.stringContent }
