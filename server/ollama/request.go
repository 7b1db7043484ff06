package ollama

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// request is the body of /api/generate and /api/chat; each reads its own
// fields. Unknown fields are ignored (truncate and shift among them:
// troupe never truncates a prompt nor shifts the context; a prompt past
// the context is a 400).
type request struct {
	Model string `json:"model"`
	// /api/generate
	Prompt   string          `json:"prompt"`
	Suffix   string          `json:"suffix"`
	System   string          `json:"system"`
	Template string          `json:"template"`
	Context  []int32         `json:"context"` // deprecated by Ollama; the tokens of an earlier exchange
	Raw      bool            `json:"raw"`
	Images   json.RawMessage `json:"images"`
	// /api/chat
	Messages []message         `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
	// both
	Format      json.RawMessage            `json:"format"`
	Options     map[string]json.RawMessage `json:"options"`
	Stream      *bool                      `json:"stream"` // default true
	Think       json.RawMessage            `json:"think"`
	KeepAlive   json.RawMessage            `json:"keep_alive"` // accepted: troupe keeps its one model loaded
	Logprobs    bool                       `json:"logprobs"`
	TopLogprobs int                        `json:"top_logprobs"`
}

func (r *request) model() string { return r.Model }

// message is a chat message in Ollama's shape.
type message struct {
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Thinking   string          `json:"thinking"` // an assistant's reasoning: rendered as chat's reasoning_content
	Images     json.RawMessage `json:"images"`
	ToolCalls  []toolCall      `json:"tool_calls"`
	ToolName   string          `json:"tool_name"`
	ToolCallID string          `json:"tool_call_id"`
}

// toolCall is a call, an assistant's or the model's: its arguments are a
// JSON object (OpenAI's are the object's text). Answers carry the id and
// index as Ollama's do (api.ToolCall); its docs/api.md shows the
// function's name and arguments.
type toolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// response is an object of a stream, or the whole answer: response is
// set for /api/generate, message for /api/chat.
type response struct {
	Model      string                      `json:"model"`
	CreatedAt  time.Time                   `json:"created_at"`
	Response   *string                     `json:"response,omitempty"`
	Thinking   string                      `json:"thinking,omitempty"` // /api/generate's
	Message    *reply                      `json:"message,omitempty"`
	Done       bool                        `json:"done"`
	DoneReason string                      `json:"done_reason,omitempty"`
	Context    []int32                     `json:"context,omitempty"`
	Logprobs   []pipeline.TokenLogprobJSON `json:"logprobs,omitempty"`
}

// reply is the assistant's message, or a piece of it in a stream:
// content, thinking, or whole tool calls.
type reply struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	Thinking  string     `json:"thinking,omitempty"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

// checkGenerate refuses what /api/generate cannot do.
func (req *request) checkGenerate() *pipeline.Error {
	switch {
	case hasValue(req.Images) && (req.Raw || req.Suffix != ""):
		return pipeline.Errorf("images", "images need the model's chat template: not with raw or suffix")
	case req.Suffix != "" && (req.Raw || req.System != "" || len(req.Context) > 0):
		return pipeline.Errorf("suffix", "suffix (fill in the middle) does not go with raw, system or context")
	case req.Template != "":
		return pipeline.Errorf("template", "template is not supported: troupe renders the model's own chat template (Jinja), or the prompt as given with raw: true")
	case req.Raw && (req.System != "" || len(req.Context) > 0):
		return pipeline.Errorf("raw", "raw mode does not support template, system, or context")
	}
	return nil
}

// common maps what both routes share: think, options, format, logprobs.
func (h *Handler) common(req *request, p *pipeline.Request) *pipeline.Error {
	if e := h.think(req, p); e != nil {
		return e
	}
	g := &messages.GenerateRequest{}
	opts := req.Options
	if len(h.model.Options) > 0 {
		opts = maps.Clone(h.model.Options)
		maps.Copy(opts, req.Options)
	}
	limits, ignored, e := applyOllamaOptions(opts, g)
	if e != nil {
		return e
	}
	p.Sampler, p.Sampling.Stop, p.Ignored = &g.Sampling, g.Stop, ignored
	if n := h.run.MaxModelLen(); limits.numCtx > n {
		return pipeline.Errorf("num_ctx", "option \"num_ctx\" %d exceeds the served context of %d tokens (troupe serve --max-model-len)", limits.numCtx, n)
	}
	// Without num_predict, until the context is full; with more than the
	// context holds, until it is full too, as Ollama's.
	p.ContextLimit, p.DefaultMaxTokens = limits.numCtx, limits.numPredict
	p.Names = map[string]string{"max_tokens": "num_predict"}
	grammar, e := ollamaFormat(req.Format)
	if e != nil {
		return e
	}
	if grammar != nil {
		p.Constraint = &pipeline.Constraint{Kind: pipeline.JSONObject, Param: "format"}
		if grammar.Kind == messages.GrammarJSONSchema {
			p.Constraint.Kind, p.Constraint.Schema = pipeline.JSONSchema, json.RawMessage(grammar.Source)
		}
	}
	if req.Logprobs {
		if req.TopLogprobs < 0 || req.TopLogprobs > 20 {
			return pipeline.Errorf("top_logprobs", "top_logprobs must be between 0 and 20")
		}
		p.WantLogprobs, p.Logprobs = true, req.TopLogprobs
	}
	return nil
}

// think reads think, as Ollama does: a model that thinks thinks unless
// think is false (unset counts as true); true or a level on a model that
// does not think is a 400. The template's switch is enable_thinking
// (Qwen3's, and DeepSeek V3.1's through it); a level ("low", "medium",
// "high"; "max" as "high") sets reasoning_effort where the template reads
// it (gpt-oss's), and otherwise counts as true.
func (h *Handler) think(req *request, p *pipeline.Request) *pipeline.Error {
	think, level, e := ollamaThink(req.Think)
	thinks := h.run.Thinks()
	switch {
	case e != nil:
		return e
	case !thinks && think != nil && *think:
		return pipeline.Errorf("think", "%q does not support thinking", req.Model)
	case !thinks && think == nil:
		return nil
	case think != nil && !*think:
		p.TemplateVars = map[string]json.RawMessage{"enable_thinking": json.RawMessage("false")}
		return nil
	}
	p.TemplateVars = map[string]json.RawMessage{"enable_thinking": json.RawMessage("true")}
	if level == "max" {
		level = "high"
	}
	p.Reasoning = pipeline.Reasoning{Effort: level, EffortIfRead: true}
	return nil
}

// chatRequest maps an /api/chat body.
func (h *Handler) chatRequest(req *request) (*pipeline.Request, *pipeline.Error) {
	p := &pipeline.Request{ParallelToolCalls: true}
	if e := h.common(req, p); e != nil {
		return nil, e
	}
	for i, m := range req.Messages {
		content, e := ollamaImages(p, m.Images, fmt.Sprintf("messages[%d].images", i), m.Content) // images.go
		if e != nil {
			return nil, e
		}
		pm := pipeline.Message{Role: pipeline.Role(m.Role), Content: content, Name: m.ToolName, ToolCallID: m.ToolCallID,
			Reasoning: m.Thinking, StringContent: true}
		for _, c := range m.ToolCalls {
			args := "{}"
			if hasValue(c.Function.Arguments) {
				args = string(c.Function.Arguments)
			}
			pm.ToolCalls = append(pm.ToolCalls, pipeline.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
		}
		p.Messages = append(p.Messages, pm)
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, pipeline.Tool{Raw: t})
	}
	if len(req.Tools) > 0 && !h.model.Tools {
		return nil, pipeline.Errorf("tools", "%q does not support tools", req.Model)
	}
	return p, nil
}

// generateRequest maps an /api/generate body: a fill-in-the-middle prompt
// with a suffix; the prompt as it is with raw (or without a template and
// a system prompt, Ollama's default template); else the system prompt
// and the prompt as a conversation. A context continues the prompt.
func (h *Handler) generateRequest(req *request) (*pipeline.Request, *pipeline.Error) {
	if e := req.checkGenerate(); e != nil {
		return nil, e
	}
	p := &pipeline.Request{Context: req.Context, WantPromptIDs: !req.Raw}
	if e := h.common(req, p); e != nil {
		return nil, e
	}
	switch {
	case req.Suffix != "":
		p.Prompt, p.Suffix, p.ParseReasoning = &pipeline.Prompt{Text: req.Prompt}, &req.Suffix, true
	case req.Raw || !h.run.HasTemplate() && req.System == "":
		p.Prompt, p.ParseReasoning = &pipeline.Prompt{Text: req.Prompt}, true
	default:
		if req.System != "" {
			p.Messages = append(p.Messages, pipeline.Message{Role: pipeline.System, Content: req.System})
		}
		prompt, e := ollamaImages(p, req.Images, "images", req.Prompt) // images.go
		if e != nil {
			return nil, e
		}
		p.Messages = append(p.Messages, pipeline.Message{Role: pipeline.User, Content: prompt})
	}
	return p, nil
}

// hasValue reports whether a raw field holds something other than null or
// an empty list.
func hasValue(v json.RawMessage) bool {
	switch strings.TrimSpace(string(v)) {
	case "", "null", "[]":
		return false
	}
	return true
}
