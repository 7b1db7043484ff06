package server

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/chat"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// Tool calls and thinking on Ollama's routes. The output goes through the
// tool-call parser the OpenAI chat route uses (tools.go): the format the
// chat template teaches, or --tool-call-parser. Calls come back in
// message.tool_calls, each whole, with its arguments as a JSON object; the
// reasoning the format marks (<think>, gpt-oss's analysis channel, ...)
// comes back in message.thinking (/api/chat) or thinking (/api/generate).

// templateThinks reports whether a chat template (src, parsed or nil)
// teaches its model to reason apart from its answer: its tool-call format f
// has a reasoning block and the template holds the block's marker. This is
// Ollama's "thinking" capability (Server.thinks).
func templateThinks(t *chat.Template, src string, f toolcall.Format) bool {
	if t == nil {
		return false
	}
	marker, ok := f.ReasoningMarker()
	return ok && strings.Contains(src, marker)
}

// thinkKwargs reads think, as Ollama does: a model that thinks thinks
// unless think is false (unset counts as true); true or a level on a model
// that does not think is a 400. The template's switch is enable_thinking
// (Qwen3's, and DeepSeek V3.1's through it); a level ("low", "medium",
// "high"; "max" as "high") sets reasoning_effort where the template reads
// it (gpt-oss's), and otherwise counts as true.
func (s *Server) thinkKwargs(req *ollamaRequest) (map[string]json.RawMessage, *apiError) {
	think, level, e := ollamaThink(req.Think)
	switch {
	case e != nil:
		return nil, e
	case !s.thinks && think != nil && *think:
		return nil, badRequest("think", "%q does not support thinking", req.Model)
	case !s.thinks && think == nil:
		return nil, nil
	case think != nil && !*think:
		return map[string]json.RawMessage{"enable_thinking": json.RawMessage("false")}, nil
	}
	kw := map[string]json.RawMessage{"enable_thinking": json.RawMessage("true")}
	if level != "" && strings.Contains(s.templateSrc, "reasoning_effort") {
		if level == "max" {
			level = "high"
		}
		kw["reasoning_effort"], _ = json.Marshal(level)
	}
	return kw, nil
}

// ollamaParser returns the parser of a request's output, nil when the
// output is all content: a model that does not think, asked for no tools
// (or whose template has no tool-call format troupe knows). With tools the
// parser reads calls; without, only the reasoning (reasoning.go).
// prompt is the rendered prompt's text: where it opens the reasoning block
// the output begins inside it, unless a format constrains the output from
// its first token.
func (s *Server) ollamaParser(tools *chatTools, g *messages.GenerateRequest, prompt string) (*toolcall.Parser, *apiError) {
	if tools != nil && len(tools.tools) > 0 { // tool_choice is "auto": no grammar to build, no context needed
		p, e := s.toolParser(context.Background(), tools, g, prompt, "format")
		if p != nil || e != nil || !s.thinks {
			return p, e
		}
	}
	return s.reasoningParser(g, prompt), nil
}

// ollamaCalls writes calls as Ollama does: an id, and the function's
// index (its place in the answer), name and arguments as a JSON object.
// first is the index of the first of them.
func ollamaCalls(calls []toolcall.Call, first int) []ollamaToolCall {
	out := make([]ollamaToolCall, len(calls))
	for i, c := range calls {
		tc := ollamaToolCall{ID: c.ID}
		tc.Function.Index = first + i
		tc.Function.Name = c.Name
		tc.Function.Arguments = json.RawMessage(c.Arguments)
		if !json.Valid(tc.Function.Arguments) { // the parsers write JSON; keep the response valid if one did not
			tc.Function.Arguments, _ = json.Marshal(c.Arguments)
		}
		out[i] = tc
	}
	return out
}

// ollamaPart is a piece of a streamed answer: content, thinking, or calls.
type ollamaPart struct {
	content, thinking string
	calls             []ollamaToolCall
}

// ollamaParts turns a stream's deltas into the parts Ollama streams: a
// run of content or of thinking is one part; a call is whole (its id and
// name, then its arguments, the toolcall.Stream's two deltas) and the
// calls that come together are one part. ncalls counts the calls so far.
func ollamaParts(ds []toolcall.Delta, ncalls *int) []ollamaPart {
	var out []ollamaPart
	var open *toolcall.Call // a call whose arguments are still to come
	for _, d := range ds {
		var last *ollamaPart
		if n := len(out); n > 0 {
			last = &out[n-1]
		}
		switch {
		case d.Call != nil && d.Call.Name != "":
			open = &toolcall.Call{ID: d.Call.ID, Name: d.Call.Name}
		case d.Call != nil:
			if open == nil {
				continue
			}
			open.Arguments = d.Call.Arguments
			calls := ollamaCalls([]toolcall.Call{*open}, *ncalls)
			*ncalls++
			open = nil
			if last != nil && last.calls != nil {
				last.calls = append(last.calls, calls...)
			} else {
				out = append(out, ollamaPart{calls: calls})
			}
		case d.Reasoning != "":
			if last != nil && last.calls == nil && last.content == "" {
				last.thinking += d.Reasoning
			} else {
				out = append(out, ollamaPart{thinking: d.Reasoning})
			}
		default:
			if last != nil && last.calls == nil && last.thinking == "" {
				last.content += d.Content
			} else {
				out = append(out, ollamaPart{content: d.Content})
			}
		}
	}
	return out
}
