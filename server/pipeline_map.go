package server

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/chat"
	"github.com/troupe-llm/troupe/server/pipeline"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// The mapping of a pipeline.Request onto the server's pieces: the
// conversation onto the chat template's input, the sampling part onto the
// fields the OpenAI routes check (params.go's table, so that every dialect
// gets the same ranges and defaults), the tools onto chatTools.

// pipelineRender renders and tokenizes req's prompt: its conversation with
// the chat template, or its prompt text as it is.
func (s *Server) pipelineRender(req *pipeline.Request) ([]int32, string, *apiError) {
	if req.Prompt != nil && req.Prompt.IDs != nil {
		return req.Prompt.IDs, "", nil
	}
	if req.Prompt != nil {
		ids, err := s.tokenizeText(req.Prompt.Text, true)
		if err != nil {
			return nil, "", tokenizeError("prompt", "tokenizing the prompt", err)
		}
		if len(ids) == 0 {
			return nil, "", badRequest("prompt", "the prompt is empty")
		}
		return ids, req.Prompt.Text, nil
	}
	if s.template == nil {
		return nil, "", s.noTemplate()
	}
	in := renderInput{msgs: make([]chat.Message, len(req.Messages)), continueFinal: req.ContinueFinal,
		addGenerationPrompt: req.AddGenerationPrompt}
	for i, m := range req.Messages {
		if e := checkRole(i, string(m.Role)); e != nil {
			return nil, "", e
		}
		cm := chat.Message{Role: string(m.Role), Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID, Reasoning: m.Reasoning,
			StringContent: m.StringContent}
		for _, c := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: c.ID, Type: "function", Function: chat.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		in.msgs[i] = cm
	}
	for _, t := range req.Tools {
		if t.Raw != nil {
			in.tools = append(in.tools, t.Raw)
		} else {
			in.tools = append(in.tools, openAITool(t))
		}
	}
	kw, e := s.thinkSwitch(req.Reasoning.Think)
	if e != nil {
		return nil, "", e
	}
	in.kwargs = req.TemplateVars
	if len(kw) > 0 {
		in.kwargs = maps.Clone(req.TemplateVars)
		if in.kwargs == nil {
			in.kwargs = kw
		}
		maps.Copy(in.kwargs, kw)
	}
	if e := req.Reasoning.Effort; e != "" && (!req.Reasoning.EffortIfRead || strings.Contains(s.templateSrc, "reasoning_effort")) {
		in.effort = &e
	}
	return s.render(&in)
}

// openAITool is a tool as chat templates read it: OpenAI's
// {"type": "function", "function": {"name", "description", "parameters"}},
// in that order (a template's tojson prints the keys as they come).
func openAITool(t pipeline.Tool) json.RawMessage {
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	b, _ := json.Marshal(struct { // plain values: cannot fail
		Type     string   `json:"type"`
		Function function `json:"function"`
	}{"function", function{t.Name, t.Description, t.Parameters}})
	return b
}

// thinkSwitch is the template variable a request's think sets: off turns a
// thinking template's reasoning off (enable_thinking, Qwen3's switch); on
// is a 400 for a template that does not reason.
func (s *Server) thinkSwitch(think *bool) (map[string]json.RawMessage, *apiError) {
	switch {
	case think == nil:
		return nil, nil
	case *think && !s.thinks:
		return nil, badRequest("thinking", "this model's chat template does not reason apart from its answer")
	case !*think && s.thinks:
		return map[string]json.RawMessage{"enable_thinking": json.RawMessage("false")}, nil
	}
	return nil, nil
}

// pipelineSampling is the sampling part of req as the OpenAI routes'
// fields, with the server's defaults filled in.
func (s *Server) pipelineSampling(p *pipeline.Sampling) *samplingFields {
	f := &samplingFields{}
	f.Sampling = *p
	s.cfg.Defaults.fill(f)
	return f
}

// requestSampling sets g's sampling from req: the dialect's resolved
// sampler (only its stop strings read from Sampling), or Sampling through
// the table; the fields are returned as the table leaves them.
func (s *Server) requestSampling(req *pipeline.Request, g *messages.GenerateRequest, lp int) (*samplingFields, *apiError) {
	if req.Sampler == nil {
		f := s.pipelineSampling(&req.Sampling)
		return f, f.toRequest(g, lp)
	}
	g.Sampling, g.Stop, g.N = *req.Sampler, req.Sampling.Stop, 1
	if lp >= 0 {
		g.Sampling.WantLogprob, g.Sampling.Logprobs = true, lp
	}
	if len(req.Ignored) > 0 {
		s.cfg.Log.Warn().Strs("fields", req.Ignored).Msg("request fields ignored (unknown, or not applied by troupe)")
	}
	return &samplingFields{}, nil
}

// withContext puts req's Context before prompt, in place of its BOS.
func (s *Server) withContext(req *pipeline.Request, prompt []int32) []int32 {
	if len(req.Context) == 0 {
		return prompt
	}
	if len(prompt) > 0 && prompt[0] == s.rt.Info().BOS {
		prompt = prompt[1:] // the context starts the sequence
	}
	return append(append([]int32(nil), req.Context...), prompt...)
}

// pipelineTools is req's tool part as chatTools, checked: tools in
// OpenAI's shape (Raw) by toolcall.ToolsFromJSON, the others by name and
// parameters; a tool_choice that needs tools, or names one, against them.
func pipelineTools(req *pipeline.Request) (*chatTools, *apiError) {
	t := &chatTools{choice: "none", parallel: req.ParallelToolCalls}
	if len(req.Tools) > 0 && req.Tools[0].Raw != nil { // OpenAI's shape, checked as it is
		raws := make([]json.RawMessage, len(req.Tools))
		for i, tool := range req.Tools {
			raws[i] = tool.Raw
		}
		var err error
		if t.tools, err = toolcall.ToolsFromJSON(raws); err != nil {
			return nil, badRequest("tools", "%v", err)
		}
	}
	for i, tool := range req.Tools {
		if tool.Raw != nil {
			continue
		}
		if tool.Name == "" {
			return nil, badRequest("tools", "tools[%d]: a name is required", i)
		}
		p := tool.Parameters
		if len(p) > 0 && string(p) != "null" && p[0] != '{' {
			return nil, badRequest("tools", "tools[%d]: the parameters must be a JSON Schema object", i)
		}
		t.tools = append(t.tools, toolcall.Tool{Name: tool.Name, Parameters: p})
	}
	if len(t.tools) > 0 {
		t.choice = "auto"
	}
	switch c := req.ToolChoice; c.Mode {
	case "":
	case pipeline.ToolAuto, pipeline.ToolNone, pipeline.ToolRequired:
		t.choice = string(c.Mode)
	case pipeline.ToolNamed:
		t.choice, t.name = "function", c.Name
	}
	switch {
	case t.choice == "auto" || t.choice == "none":
	case len(t.tools) == 0:
		return nil, badRequest("tool_choice", "tool_choice %s needs tools", t.choiceText())
	case t.name != "" && !t.has(t.name):
		return nil, badRequest("tool_choice", "tool_choice names the function %q, which is not in tools", t.name)
	}
	return t, nil
}

// pipelineGrammar is the grammar of req's constraint, nil without one.
func pipelineGrammar(c *pipeline.Constraint) (*messages.Grammar, *apiError) {
	if c == nil {
		return nil, nil
	}
	if c.Kind == pipeline.JSONObject || pipeline.IsNull(c.Schema) {
		return &messages.Grammar{Kind: messages.GrammarJSONObject}, nil
	}
	g, err := jsonFormatGrammar(c.Schema)
	if err != nil {
		return nil, badRequest(c.Param, "%s: %v", c.Param, err)
	}
	return g, nil
}

// toPipelineError is e as a pipeline error, its param in the dialect's
// names.
func toPipelineError(e *apiError, names map[string]string) *pipeline.Error {
	if e == nil {
		return nil
	}
	pe := &pipeline.Error{Kind: pipeline.KindOf(e.Status), Message: e.Message, RetryAfter: e.RetryAfter}
	if e.Param != nil {
		pe.Param = *e.Param
	}
	if e.Code != nil {
		pe.Code = *e.Code
	}
	if e.Code != nil && *e.Code == "context_length_exceeded" {
		pe.Kind = pipeline.ContextLength
	}
	if e.Status == http.StatusInternalServerError {
		pe.Kind = pipeline.Internal
	}
	return pe.Rename(names)
}
