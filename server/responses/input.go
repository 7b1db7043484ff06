package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// item is an input item: a message (type "message", or none), a
// function_call, a function_call_output or a reasoning item.
type item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Summary   []part          `json:"summary"`
	ID        string          `json:"id"`
	Status    string          `json:"status"`
}

// part is a content part of a message or a reasoning item.
type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// readInput translates input: a string (one user message) or a list of
// items. Consecutive function_call items (and a reasoning item before
// them) join the assistant message before them; a function_call_output
// must answer a call made before it, here or in history.
func readInput(raw json.RawMessage, history []pipeline.Message) ([]pipeline.Message, *pipeline.Error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []pipeline.Message{{Role: pipeline.User, Content: s}}, nil
	}
	var items []json.RawMessage
	if pipeline.IsNull(raw) || json.Unmarshal(raw, &items) != nil {
		return nil, pipeline.Errorf("input", "input: expected a string or a list of items")
	}
	if len(items) == 0 && len(history) == 0 {
		return nil, pipeline.Errorf("input", "input: at least one item is required")
	}
	calls := map[string]bool{}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
	}
	b := &inputBuilder{calls: calls}
	for i, rawItem := range items {
		f := fmt.Sprintf("input[%d]", i)
		var it item
		if err := json.Unmarshal(rawItem, &it); err != nil {
			return nil, pipeline.Errorf(f, "%s: expected an item object", f)
		}
		if e := b.add(&it, f); e != nil {
			return nil, e
		}
	}
	if b.reasoning != "" {
		return nil, pipeline.Errorf("input", "input: a reasoning item must be followed by the assistant message or function call it led to")
	}
	return b.out, nil
}

// inputBuilder gathers the messages of the items.
type inputBuilder struct {
	out       []pipeline.Message
	calls     map[string]bool // call ids made so far
	reasoning string          // a reasoning item's text, for the next assistant message
}

func (b *inputBuilder) add(it *item, f string) *pipeline.Error {
	switch it.Type {
	case "", "message":
		return b.message(it, f)
	case "function_call":
		if it.CallID == "" || it.Name == "" || it.Arguments == nil {
			return pipeline.Errorf(f, "%s: a function_call needs call_id, name and arguments", f)
		}
		args := strings.TrimSpace(*it.Arguments)
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) || args[0] != '{' {
			return pipeline.Errorf(f+".arguments", "%s.arguments: expected a JSON object's text", f)
		}
		m := b.assistant(len(b.out) > 0 && b.out[len(b.out)-1].Role == pipeline.Assistant)
		m.ToolCalls = append(m.ToolCalls, pipeline.ToolCall{ID: it.CallID, Name: it.Name, Arguments: args})
		b.calls[it.CallID] = true
	case "function_call_output":
		if !b.calls[it.CallID] {
			return pipeline.Errorf(f+".call_id", "%s.call_id %q: no function_call with this call_id comes before it", f, it.CallID)
		}
		out, e := outputText(it.Output, f+".output")
		if e != nil {
			return e
		}
		b.out = append(b.out, pipeline.Message{Role: pipeline.ToolRole, Content: out, ToolCallID: it.CallID, Name: b.callName(it.CallID)})
	case "reasoning":
		var text []string
		for _, p := range it.Summary {
			text = append(text, p.Text)
		}
		var content []part
		if !pipeline.IsNull(it.Content) && json.Unmarshal(it.Content, &content) != nil {
			return pipeline.Errorf(f+".content", "%s.content: expected a list of reasoning_text parts", f)
		}
		for _, p := range content {
			text = append(text, p.Text)
		}
		b.reasoning += strings.Join(text, "\n")
	default:
		return pipeline.Errorf(f+".type", `%s.type %q: want "message", "function_call", "function_call_output" or "reasoning"`, f, it.Type)
	}
	return nil
}

// message adds a message item.
func (b *inputBuilder) message(it *item, f string) *pipeline.Error {
	text, e := messageText(it.Content, f+".content")
	if e != nil {
		return e
	}
	switch it.Role {
	case "user":
		b.out = append(b.out, pipeline.Message{Role: pipeline.User, Content: text})
	case "system", "developer":
		b.out = append(b.out, pipeline.Message{Role: pipeline.System, Content: text})
	case "assistant":
		m := b.assistant(false)
		m.Content = text
	default:
		return pipeline.Errorf(f+".role", `%s.role %q: want "user", "assistant", "system" or "developer"`, f, it.Role)
	}
	if it.Role != "assistant" && b.reasoning != "" {
		return pipeline.Errorf(f, "%s: a reasoning item must be followed by the assistant message or function call it led to", f)
	}
	return nil
}

// assistant is the assistant message to add to: the last one when join,
// else a new one, which takes the pending reasoning.
func (b *inputBuilder) assistant(join bool) *pipeline.Message {
	if !join {
		b.out = append(b.out, pipeline.Message{Role: pipeline.Assistant})
	}
	m := &b.out[len(b.out)-1]
	m.Reasoning += b.reasoning
	b.reasoning = ""
	return m
}

// callName is the name of the function the call id called.
func (b *inputBuilder) callName(id string) string {
	for i := len(b.out) - 1; i >= 0; i-- {
		for _, c := range b.out[i].ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return ""
}

// messageText is a message's content: a string or a list of text parts.
func messageText(raw json.RawMessage, f string) (string, *pipeline.Error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []part
	if pipeline.IsNull(raw) || json.Unmarshal(raw, &parts) != nil {
		return "", pipeline.Errorf(f, "%s: expected a string or a list of content parts", f)
	}
	var text []string
	for i, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			text = append(text, p.Text)
		case "input_image", "input_file", "input_audio":
			return "", pipeline.Errorf(fmt.Sprintf("%s[%d].type", f, i), "%s[%d].type %q: troupe serves text-only models", f, i, p.Type)
		default:
			return "", pipeline.Errorf(fmt.Sprintf("%s[%d].type", f, i), "%s[%d].type %q: unknown content part type", f, i, p.Type)
		}
	}
	return strings.Join(text, "\n"), nil
}

// outputText is a function_call_output's output: a string or text parts.
func outputText(raw json.RawMessage, f string) (string, *pipeline.Error) {
	if pipeline.IsNull(raw) {
		return "", pipeline.Errorf(f, "%s is required", f)
	}
	return messageText(raw, f)
}
