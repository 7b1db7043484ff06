package server

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/chat"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// Reasoning on the OpenAI chat route, as llama-server (reasoning_format
// auto) and vLLM's gpt-oss serving do: where the chat template teaches its
// model to reason apart from its answer (Qwen3's <think>, gpt-oss's
// analysis channel; the "thinking" capability of Ollama's routes), the
// output always goes through the template's parser, so that the reasoning
// comes back as reasoning_content, with or without tools. Without tools,
// or with tool_choice "none", calls are not read (a harmony call is then
// dropped, as vLLM and llama.cpp drop it; other formats' call text is
// content).

// reasoningEfforts are the values of a chat request's reasoning_effort, as
// vLLM takes it (gpt-oss's template knows these three).
var reasoningEfforts = map[string]bool{"low": true, "medium": true, "high": true}

// reasoningParser returns the parser of an output's reasoning when the
// template reasons and no other parser reads the output, else nil. A
// grammar constrains the output from its first token: it then does not
// begin inside a reasoning block the prompt opened.
func (s *Server) reasoningParser(g *messages.GenerateRequest, prompt string) *toolcall.Parser {
	if !s.thinks {
		return nil
	}
	g.SpecialText = true // the parser must see the markers
	return &toolcall.Parser{Format: s.toolFormat, NoCalls: true,
		ReasoningOpen: g.Grammar == nil && toolcall.PromptOpensReasoning(s.toolFormat, prompt)}
}

// setReasoningEffort sets the template variable reasoning_effort from the
// request's field (gpt-oss's template reads it). A template that does not
// read it cannot honour it: a 400, as OpenAI answers for a model without
// reasoning levels, rather than a field silently ignored. One value per
// variable: chat_template_kwargs may name it too, with the same value.
func (s *Server) setReasoningEffort(o *chat.Options, effort *string) *apiError {
	if effort == nil {
		return nil
	}
	if !reasoningEfforts[*effort] {
		return badRequest("reasoning_effort", `reasoning_effort %q: want "low", "medium" or "high"`, *effort)
	}
	if !strings.Contains(s.templateSrc, "reasoning_effort") {
		return badRequest("reasoning_effort", "reasoning_effort: the model's chat template has no reasoning levels")
	}
	if o.Extra == nil {
		o.Extra = map[string]any{}
	}
	if kw, ok := o.Extra["reasoning_effort"]; ok {
		var v string
		raw, _ := kw.(json.RawMessage)
		if json.Unmarshal(raw, &v) != nil || v != *effort {
			return badRequest("reasoning_effort", "reasoning_effort %q and chat_template_kwargs.reasoning_effort %s differ; set one of them", *effort, raw)
		}
	}
	o.Extra["reasoning_effort"] = *effort
	return nil
}

// harmonyMessage adjusts a message for gpt-oss's template, as llama.cpp
// does: an assistant's call with reasoning renders its reasoning as the
// call's analysis, and the template refuses content beside it, so the
// content (a preamble the model wrote) is left out
// (toolcall.Format.HidesContentBesideReasonedCalls).
func (s *Server) harmonyMessage(m *chat.Message) {
	if s.toolFormat.HidesContentBesideReasonedCalls() && m.Reasoning != "" && len(m.ToolCalls) > 0 {
		m.Content = ""
	}
}

// harmonyAnswer lets a gpt-oss model reason before an answer constrained
// to JSON (response_format, guided_json, Ollama's format...), as
// llama.cpp's gpt-oss grammar and vLLM's structured output after the
// reasoning do: the grammar becomes analysis messages, the final channel's
// header, then the JSON (toolcall.AnswerGrammar), and the output's parser
// reads the JSON as the content. Regex, choice and GBNF constraints stay
// as they are: the whole output is then the answer. The request's grammar
// has been checked (param names it).
func (s *Server) harmonyAnswer(ctx context.Context, g *messages.GenerateRequest, param string) *apiError {
	if g.Grammar == nil || !s.toolFormat.WrapsAnswer() || !s.thinks {
		return nil
	}
	var schema []byte
	switch g.Grammar.Kind {
	case messages.GrammarJSONSchema:
		schema = []byte(g.Grammar.Source)
	case messages.GrammarJSONObject:
		schema = []byte(`{"type": "object"}`)
	default:
		return nil
	}
	answer, err := s.rt.BuildGrammar(ctx, toolcall.AnswerBuild(s.toolFormat, schema))
	if err != nil {
		return grammarError(err, param)
	}
	g.Grammar = answer
	return nil
}
