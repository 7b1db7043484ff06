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
// templates read, as llama.cpp does (toolcall.Format.TemplateVariables).
// chat_template_kwargs win.
func (s *Server) toolVariables(o *chat.Options, tools []json.RawMessage) {
	vars := s.toolFormat.TemplateVariables(tools, time.Now())
	if vars == nil {
		return
	}
	if o.Extra == nil {
		o.Extra = map[string]any{}
	}
	for k, v := range vars {
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
	calls, err := s.rt.BuildGrammar(ctx, toolcall.GrammarBuild(s.toolFormat, toolcall.Calls{Tools: t.tools, Name: t.name,
		Parallel: t.parallel, Template: s.templateSrc, ReasoningOpen: p.ReasoningOpen}))
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

// toolFinish is a choice's finish_reason once its calls are known: a
// choice that stopped after calling tools finished with "tool_calls".
func toolFinish(reason string, calls bool) string {
	if calls && reason == messages.FinishStop {
		return "tool_calls"
	}
	return reason
}
