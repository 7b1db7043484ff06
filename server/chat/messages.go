package chat

import (
	"encoding/json"
	"fmt"
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
// arguments as JSON when they are passed as text (objectArgs false) or as
// an object.
func (t *Template) rendersArguments(objectArgs bool) bool {
	out, err := t.render(probeMessages, Options{Tools: probeTools}, objectArgs)
	return err == nil && (strings.Contains(out, `"argument_needle":`) || strings.Contains(out, `'argument_needle':`))
}
