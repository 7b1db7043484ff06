package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// request is the body of POST /v1/messages (count_tokens reads the same
// fields but max_tokens and the sampling ones).
type request struct {
	Model         string           `json:"model"`
	MaxTokens     *int             `json:"max_tokens"`
	Messages      []message        `json:"messages"`
	System        json.RawMessage  `json:"system"`
	StopSequences []string         `json:"stop_sequences"`
	Stream        bool             `json:"stream"`
	Temperature   *float64         `json:"temperature"`
	TopK          *int             `json:"top_k"`
	TopP          *float64         `json:"top_p"`
	Tools         []tool           `json:"tools"`
	ToolChoice    *toolChoice      `json:"tool_choice"`
	Thinking      *thinking        `json:"thinking"`
	Metadata      *json.RawMessage `json:"metadata"` // user_id: accepted, it only labels the request
	ServiceTier   *string          `json:"service_tier"`
	unknown       []string         // fields troupe does not know
}

// known are the body's fields troupe reads; any other is a 400 naming it.
var known = []string{"model", "max_tokens", "messages", "system", "stop_sequences", "stream", "temperature",
	"top_k", "top_p", "tools", "tool_choice", "thinking", "metadata", "service_tier"}

func (r *request) UnmarshalJSON(b []byte) error {
	type plain request
	var err error
	r.unknown, err = pipeline.DecodeKnown(b, (*plain)(r), known, false)
	return err
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// block is a content block of a message or of the system prompt.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Source    *imageSource    `json:"source"` // an image block's (images.go)
}

type tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// toPipeline checks the request and translates it. count is true for
// count_tokens, which needs no max_tokens.
func (r *request) toPipeline(count bool, thinks bool) (*pipeline.Request, *pipeline.Error) {
	if e := pipeline.Unsupported(r.unknown); e != nil {
		return nil, e
	}
	p := &pipeline.Request{ParallelToolCalls: true,
		Names: map[string]string{"stop": "stop_sequences", "reasoning_effort": "thinking", "reasoning_budget_tokens": "thinking.budget_tokens"}}
	if !count {
		if r.MaxTokens == nil {
			return nil, pipeline.Errorf("max_tokens", "max_tokens: Field required")
		}
		if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1) {
			return nil, pipeline.Errorf("temperature", "temperature: %v is outside [0, 1]", *r.Temperature)
		}
		if r.ServiceTier != nil && *r.ServiceTier != "auto" && *r.ServiceTier != "standard_only" {
			return nil, pipeline.Errorf("service_tier", `service_tier: %q: want "auto" or "standard_only"`, *r.ServiceTier)
		}
		p.Sampling = pipeline.Sampling{MaxTokens: r.MaxTokens, Temperature: r.Temperature, TopK: r.TopK, TopP: r.TopP, Stop: r.StopSequences}
	}
	sys, err := systemText(r.System)
	if err != nil {
		return nil, err
	}
	if sys != "" {
		p.Messages = append(p.Messages, pipeline.Message{Role: pipeline.System, Content: sys})
	}
	msgs, err := conversation(r.Messages, &p.Images)
	if err != nil {
		return nil, err
	}
	p.Messages = append(p.Messages, msgs...)
	p.ContinueFinal = p.Messages[len(p.Messages)-1].Role == pipeline.Assistant
	if err := r.readTools(p); err != nil {
		return nil, err
	}
	if err := r.readThinking(p, thinks); err != nil {
		return nil, err
	}
	return p, nil
}

// systemText is the system prompt: a string or a list of text blocks.
func systemText(raw json.RawMessage) (string, *pipeline.Error) {
	if pipeline.IsNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return "", pipeline.Errorf("system", "system: expected a string or a list of text blocks")
	}
	var b bytes.Buffer
	for i, bl := range blocks {
		if bl.Type != "text" {
			return "", pipeline.Errorf("system", "system[%d].type %q: only text blocks are allowed in the system prompt", i, bl.Type)
		}
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// readTools translates tools and tool_choice.
func (r *request) readTools(p *pipeline.Request) *pipeline.Error {
	for i, t := range r.Tools {
		if t.Type != "" && t.Type != "custom" {
			return pipeline.Errorf(fmt.Sprintf("tools.%d.type", i), "tools.%d.type %q: only custom (client) tools are supported", i, t.Type)
		}
		if t.Name == "" {
			return pipeline.Errorf(fmt.Sprintf("tools.%d.name", i), "tools.%d.name: Field required", i)
		}
		if pipeline.IsNull(t.InputSchema) || bytes.TrimSpace(t.InputSchema)[0] != '{' {
			return pipeline.Errorf(fmt.Sprintf("tools.%d.input_schema", i), "tools.%d.input_schema: a JSON Schema object is required", i)
		}
		p.Tools = append(p.Tools, pipeline.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	c := r.ToolChoice
	if c == nil {
		return nil
	}
	p.ParallelToolCalls = !c.DisableParallelToolUse
	switch c.Type {
	case "auto":
		p.ToolChoice.Mode = pipeline.ToolAuto
	case "any":
		p.ToolChoice.Mode = pipeline.ToolRequired
	case "tool":
		if c.Name == "" {
			return pipeline.Errorf("tool_choice.name", "tool_choice.name: Field required for type \"tool\"")
		}
		p.ToolChoice = pipeline.ToolChoice{Mode: pipeline.ToolNamed, Name: c.Name}
	case "none":
		p.ToolChoice.Mode = pipeline.ToolNone
	default:
		return pipeline.Errorf("tool_choice.type", `tool_choice.type %q: want "auto", "any", "tool" or "none"`, c.Type)
	}
	return nil
}

// readThinking translates thinking: enabled on a template that reasons,
// its budget_tokens the reasoning section's bound (past it the section is
// closed for the model, as llama-server does); disabled turns the
// template's reasoning off.
func (r *request) readThinking(p *pipeline.Request, thinks bool) *pipeline.Error {
	t := r.Thinking
	if t == nil {
		return nil
	}
	switch t.Type {
	case "enabled":
		if !thinks {
			return pipeline.Errorf("thinking", "thinking: this model's chat template does not reason apart from its answer")
		}
		if t.BudgetTokens < 1024 {
			return pipeline.Errorf("thinking.budget_tokens", "thinking.budget_tokens: %d is less than 1024", t.BudgetTokens)
		}
		if r.MaxTokens != nil && t.BudgetTokens >= *r.MaxTokens {
			return pipeline.Errorf("thinking.budget_tokens", "thinking.budget_tokens: must be less than max_tokens")
		}
		on := true
		p.Reasoning.Think = &on
		budget := t.BudgetTokens
		p.Reasoning.BudgetTokens = &budget
	case "disabled":
		off := false
		p.Reasoning.Think = &off
	default:
		return pipeline.Errorf("thinking.type", `thinking.type %q: want "enabled" or "disabled"`, t.Type)
	}
	return nil
}
