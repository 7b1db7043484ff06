package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/chat"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// toolFormat is the format named (--tool-call-parser), or else the one
// the chat template teaches.
func toolFormat(name, template string) (toolcall.Format, error) {
	if name == "" {
		return toolcall.Detect(template), nil
	}
	return toolcall.Lookup(name)
}

// toolVariables sets the template variables besides tools that a format's
// templates read, as llama.cpp does: firefunction v2's functions (the
// tools as indented JSON) and datetime. chat_template_kwargs win.
func (s *Server) toolVariables(o *chat.Options, tools []json.RawMessage) {
	if s.toolFormat != toolcall.FireFunction2 {
		return
	}
	functions := ""
	if len(tools) > 0 {
		b, err := json.MarshalIndent(tools, "", "  ")
		if err == nil {
			functions = string(b)
		}
	}
	if o.Extra == nil {
		o.Extra = map[string]any{}
	}
	for k, v := range map[string]string{"functions": functions, "datetime": time.Now().UTC().Format("Jan 02 2006 15:04:05 GMT")} {
		if _, ok := o.Extra[k]; !ok {
			o.Extra[k] = v
		}
	}
}

// chatTools is what a chat request's tools, tool_choice and
// parallel_tool_calls ask for.
type chatTools struct {
	tools    []toolcall.Tool
	choice   string // "none", "auto", "required" or "function"
	name     string // the function tool_choice names
	parallel bool
}

// readTools checks the request's tool fields. Without tools tool_choice
// defaults to "none", with them to "auto"; "required" and a named function
// need tools (the name one of them).
func readTools(req *chatRequest) (*chatTools, *apiError) {
	t := &chatTools{choice: "none", parallel: true}
	if req.ParallelToolCalls != nil {
		t.parallel = *req.ParallelToolCalls
	}
	var err error
	if t.tools, err = toolcall.ToolsFromJSON(req.Tools); err != nil {
		return nil, badRequest("tools", "%v", err)
	}
	if len(t.tools) > 0 {
		t.choice = "auto"
	}
	if isNull(req.ToolChoice) {
		return t, nil
	}
	var s string
	if json.Unmarshal(req.ToolChoice, &s) == nil {
		switch s {
		case "none", "auto", "required":
			t.choice = s
		default:
			return nil, badRequest("tool_choice", `tool_choice %q: want "none", "auto", "required" or {"type": "function", "function": {"name": ...}}`, s)
		}
	} else {
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(req.ToolChoice, &named) != nil || named.Type != "function" || named.Function.Name == "" {
			return nil, badRequest("tool_choice", `tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}`)
		}
		t.choice, t.name = "function", named.Function.Name
	}
	switch {
	case t.choice == "auto" || t.choice == "none":
	case len(t.tools) == 0:
		return nil, badRequest("tool_choice", "tool_choice %s needs tools", string(req.ToolChoice))
	case t.name != "" && !t.has(t.name):
		return nil, badRequest("tool_choice", "tool_choice names the function %q, which is not in tools", t.name)
	}
	return t, nil
}

func (t *chatTools) has(name string) bool {
	for _, tool := range t.tools {
		if tool.Name == name {
			return true
		}
	}
	return false
}

// forced reports whether the output must be tool calls.
func (t *chatTools) forced() bool { return t.choice == "required" || t.choice == "function" }

// toolParser returns the parser of the request's output, nil when its
// calls are not parsed: no tools, tool_choice "none" (the tools are
// rendered, as vLLM does, but calls are not read), or a model whose chat
// template has no tool-call format. With a parser the output keeps control
// tokens' text (SpecialText), for the parser to see the markers. With
// tool_choice "required" or a named function the output is constrained by
// a grammar of the format's calls, so that it parses.
func (s *Server) toolParser(ctx context.Context, t *chatTools, g *messages.GenerateRequest, prompt, grammarParam string) (*toolcall.Parser, *apiError) {
	if t.choice == "none" {
		return nil, nil
	}
	if s.toolFormat == toolcall.None {
		if t.forced() {
			return nil, badRequest("tool_choice", "tool_choice %s: the model's chat template has no tool-call format troupe knows; start the server with --tool-call-parser NAME", t.choiceText())
		}
		return nil, nil
	}
	// A grammar (response_format) constrains the output from its first
	// token: it then does not begin inside a reasoning block the prompt
	// opened (as reasoningParser).
	p := &toolcall.Parser{Format: s.toolFormat, Tools: t.tools,
		ReasoningOpen: g.Grammar == nil && toolcall.PromptOpensReasoning(s.toolFormat, prompt)}
	g.SpecialText = true
	if !t.forced() {
		return p, nil
	}
	p.CallsOnly = true
	if g.Grammar != nil {
		return nil, badRequest("tool_choice", "tool_choice %s and %s both constrain the output; set one of them", t.choiceText(), grammarParam)
	}
	// The grammar, with its schemas' conversions, is built and compiled on
	// the runtime's compiler, bounded and stopped with the request.
	calls, err := s.rt.BuildGrammar(ctx, func(schemaGBNF func([]byte) (string, error)) (string, error) {
		return toolcall.Grammar(s.toolFormat, toolcall.Calls{Tools: t.tools, Name: t.name, Parallel: t.parallel,
			Template: s.templateSrc, ReasoningOpen: p.ReasoningOpen, SchemaGBNF: schemaGBNF})
	})
	var te *toolcall.ToolError
	switch {
	case err == nil:
		g.Grammar = calls
		return p, nil
	case errors.Is(err, toolcall.ErrNoGrammar):
		return nil, badRequest("tool_choice", "tool_choice %s is not supported for the %s tool-call format (no grammar for its calls yet); use \"auto\"", t.choiceText(), s.toolFormat)
	case errors.As(err, &te):
		return nil, grammarError(err, fmt.Sprintf("tools[%d].function.parameters", te.Index))
	}
	return nil, grammarError(err, "tools")
}

func (t *chatTools) choiceText() string {
	if t.name != "" {
		return fmt.Sprintf("naming %q", t.name)
	}
	return fmt.Sprintf("%q", t.choice)
}

// toolCallJSON is a tool call in a message, or a piece of one in a stream
// delta (Index set: the first piece has the id, type and name, later ones
// argument fragments).
type toolCallJSON struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function functionJSON `json:"function"`
}

type functionJSON struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// toolResult is a whole output parsed: the message's content (nil when
// there are calls and no text), reasoning and calls; parallel false keeps
// the first call only.
func toolResult(p *toolcall.Parser, text string, parallel bool) (content *string, reasoning string, calls []toolCallJSON) {
	r := p.Parse(text)
	if !parallel && len(r.Calls) > 1 {
		r.Calls = r.Calls[:1]
	}
	for _, c := range r.Calls {
		calls = append(calls, toolCallJSON{ID: c.ID, Type: "function", Function: functionJSON{Name: c.Name, Arguments: c.Arguments}})
	}
	if r.Content != "" || len(calls) == 0 {
		content = &r.Content
	}
	return content, r.Reasoning, calls
}

// toolDeltas turns a stream's deltas into chat deltas: one per delta, in
// order; parallel false drops calls after the first.
func toolDeltas(ds []toolcall.Delta, parallel bool) []*chatDelta {
	var out []*chatDelta
	for _, d := range ds {
		switch {
		case d.Call != nil:
			if !parallel && d.Call.Index > 0 {
				continue
			}
			i := d.Call.Index
			tc := toolCallJSON{Index: &i, Function: functionJSON{Name: d.Call.Name, Arguments: d.Call.Arguments}}
			if d.Call.ID != "" {
				tc.ID, tc.Type = d.Call.ID, "function"
			}
			out = append(out, &chatDelta{ToolCalls: []toolCallJSON{tc}})
		case d.Reasoning != "":
			r := d.Reasoning
			out = append(out, &chatDelta{ReasoningContent: &r})
		default:
			c := d.Content
			out = append(out, &chatDelta{Content: &c})
		}
	}
	return out
}

// toolFinish is a choice's finish_reason once its calls are known: a
// choice that stopped after calling tools finished with "tool_calls".
func toolFinish(reason string, calls bool) string {
	if calls && reason == messages.FinishStop {
		return "tool_calls"
	}
	return reason
}
