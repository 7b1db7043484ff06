package langchain

import (
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-llm/troupe"
)

// request is troupe's chat request for messages under o.
func request(messages []llms.MessageContent, o *llms.CallOptions) (*troupe.ChatRequest, error) {
	if err := unsupported(o); err != nil {
		return nil, err
	}
	req := &troupe.ChatRequest{Sampling: troupe.Sampling{Temperature: troupe.Float(o.Temperature), Stop: o.StopWords}}
	if o.MaxTokens > 0 {
		req.MaxTokens = troupe.Int(o.MaxTokens)
	}
	if o.TopP > 0 {
		req.TopP = troupe.Float(o.TopP)
	}
	if o.TopK > 0 {
		req.TopK = troupe.Int(o.TopK)
	}
	if o.Seed != 0 {
		req.Seed = troupe.Int64(int64(o.Seed))
	}
	if o.JSONMode || o.ResponseMIMEType == "application/json" {
		req.JSON = &troupe.JSONFormat{}
	}
	for i, mc := range messages {
		ms, err := message(mc)
		if err != nil {
			return nil, fmt.Errorf("langchain: message %d: %w", i, err)
		}
		req.Messages = append(req.Messages, ms...)
	}
	var err error
	if req.Tools, err = tools(o); err != nil {
		return nil, err
	}
	if req.ToolChoice, err = toolChoice(o); err != nil {
		return nil, err
	}
	req.ParallelToolCalls = len(req.Tools) > 0
	return req, nil
}

// message is troupe's messages for one of langchaingo's: a tool role's
// responses become one message each.
func message(mc llms.MessageContent) ([]troupe.Message, error) {
	role, err := roleOf(mc.Role)
	if err != nil {
		return nil, err
	}
	m := troupe.Message{Role: role}
	var out []troupe.Message
	for _, p := range mc.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			m.Content += p.Text
		case llms.ToolCall:
			if p.FunctionCall == nil {
				return nil, fmt.Errorf("tool call %q has no function", p.ID)
			}
			m.ToolCalls = append(m.ToolCalls, troupe.ToolCall{ID: p.ID, Name: p.FunctionCall.Name, Arguments: arguments(p.FunctionCall.Arguments)})
		case llms.ToolCallResponse:
			out = append(out, troupe.Message{Role: troupe.RoleTool, ToolCallID: p.ToolCallID, Name: p.Name, Content: p.Content})
		default:
			return nil, fmt.Errorf("a %T part is not supported (text, tool calls and tool responses are)", p)
		}
	}
	if m.Content != "" || len(m.ToolCalls) > 0 || len(out) == 0 {
		out = append([]troupe.Message{m}, out...)
	}
	return out, nil
}

// arguments is a past call's arguments as a JSON object's text. langchaingo's
// OpenAI-functions agent writes back the tool's input string it took out of
// its "__arg1" parameter; that is put back in the object it came from.
func arguments(args string) string {
	var obj map[string]any
	if json.Unmarshal([]byte(args), &obj) == nil {
		return args
	}
	b, _ := json.Marshal(map[string]string{"__arg1": args})
	return string(b)
}

// roleOf is troupe's role for langchaingo's.
func roleOf(r llms.ChatMessageType) (troupe.Role, error) {
	switch r {
	case llms.ChatMessageTypeSystem:
		return troupe.RoleSystem, nil
	case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
		return troupe.RoleUser, nil
	case llms.ChatMessageTypeAI:
		return troupe.RoleAssistant, nil
	case llms.ChatMessageTypeTool, llms.ChatMessageTypeFunction:
		return troupe.RoleTool, nil
	}
	return "", fmt.Errorf("role %q is not supported", r)
}

// tools is troupe's tools for o's Tools and (legacy) Functions.
func tools(o *llms.CallOptions) ([]troupe.Tool, error) {
	defs := make([]llms.FunctionDefinition, 0, len(o.Tools)+len(o.Functions))
	for _, t := range o.Tools {
		if t.Type != "function" || t.Function == nil {
			return nil, fmt.Errorf("langchain: tool of type %q: only functions are supported", t.Type)
		}
		defs = append(defs, *t.Function)
	}
	defs = append(defs, o.Functions...)
	out := make([]troupe.Tool, 0, len(defs))
	for _, d := range defs {
		t := troupe.Tool{Name: d.Name, Description: d.Description}
		if d.Parameters != nil {
			b, err := json.Marshal(d.Parameters)
			if err != nil {
				return nil, fmt.Errorf("langchain: tool %q: parameters: %w", d.Name, err)
			}
			t.Parameters = b
		}
		out = append(out, t)
	}
	return out, nil
}

// toolChoice is troupe's tool choice for o's ToolChoice (a mode's name, an
// llms.ToolChoice naming a function) or FunctionCallBehavior.
func toolChoice(o *llms.CallOptions) (troupe.ToolChoice, error) {
	switch c := o.ToolChoice.(type) {
	case nil:
	case string:
		switch mode := troupe.ToolMode(c); mode {
		case troupe.ToolAuto, troupe.ToolNone, troupe.ToolRequired:
			return troupe.ToolChoice{Mode: mode}, nil
		}
		return troupe.ToolChoice{}, fmt.Errorf("langchain: tool choice %q: want auto, none or required", c)
	case llms.ToolChoice:
		return namedChoice(&c)
	case *llms.ToolChoice:
		return namedChoice(c)
	default:
		return troupe.ToolChoice{}, fmt.Errorf("langchain: a tool choice of type %T is not supported", c)
	}
	switch o.FunctionCallBehavior {
	case "", llms.FunctionCallBehaviorAuto:
		return troupe.ToolChoice{}, nil
	case llms.FunctionCallBehaviorNone:
		return troupe.ToolChoice{Mode: troupe.ToolNone}, nil
	}
	return troupe.ToolChoice{}, fmt.Errorf("langchain: function call behavior %q is not supported", o.FunctionCallBehavior)
}

// namedChoice is the tool choice that names c's function.
func namedChoice(c *llms.ToolChoice) (troupe.ToolChoice, error) {
	if c == nil || c.Type != "function" || c.Function == nil || c.Function.Name == "" {
		return troupe.ToolChoice{}, fmt.Errorf("langchain: a tool choice must name a function")
	}
	return troupe.ToolChoice{Mode: troupe.ToolNamed, Name: c.Function.Name}, nil
}
