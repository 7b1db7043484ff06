package responses

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// request is the body of POST /v1/responses (and input_tokens).
type request struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              []tool          `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	Text               *textConfig     `json:"text"`
	Reasoning          *reasoning      `json:"reasoning"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Stream             bool            `json:"stream"`
	Store              *bool           `json:"store"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Metadata           map[string]any  `json:"metadata"`
	User               *string         `json:"user"`
	Truncation         *string         `json:"truncation"`
	Include            []string        `json:"include"`
	Background         *bool           `json:"background"`
	ServiceTier        *string         `json:"service_tier"`
	StreamOptions      json.RawMessage `json:"stream_options"`
	PromptCacheKey     *string         `json:"prompt_cache_key"`
	SafetyIdentifier   *string         `json:"safety_identifier"`
	unknown            []string
}

// known are the body's fields troupe reads; any other is a 400 naming it.
var known = []string{"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "text", "reasoning",
	"max_output_tokens", "temperature", "top_p", "stream", "store", "previous_response_id", "metadata", "user",
	"truncation", "include", "background", "service_tier", "stream_options", "prompt_cache_key", "safety_identifier"}

func (r *request) UnmarshalJSON(b []byte) error {
	type plain request
	var err error
	r.unknown, err = pipeline.DecodeKnown(b, (*plain)(r), known, true)
	return err
}

type tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

type textConfig struct {
	Format *struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"format"`
	Verbosity *string `json:"verbosity"`
}

type reasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// check refuses what troupe cannot honour; the field named.
func (r *request) check() *pipeline.Error {
	if e := pipeline.Unsupported(r.unknown); e != nil {
		return e
	}
	switch {
	case r.Background != nil && *r.Background:
		return pipeline.Errorf("background", "background: background responses are not supported")
	case r.Truncation != nil && *r.Truncation != "disabled":
		return pipeline.Errorf("truncation", `truncation %q: troupe never truncates the input; only "disabled"`, *r.Truncation)
	case len(r.Include) > 0:
		return pipeline.Errorf("include", "include: %q is not supported", r.Include[0])
	case r.Text != nil && r.Text.Verbosity != nil && *r.Text.Verbosity != "medium":
		return pipeline.Errorf("text.verbosity", `text.verbosity %q: only "medium"`, *r.Text.Verbosity)
	case r.Reasoning != nil && r.Reasoning.Summary != nil:
		return pipeline.Errorf("reasoning.summary", "reasoning.summary: summaries are not supported (the reasoning comes back as reasoning_text)")
	case r.ServiceTier != nil && *r.ServiceTier != "auto" && *r.ServiceTier != "default":
		return pipeline.Errorf("service_tier", "service_tier %q is not supported", *r.ServiceTier)
	}
	return nil
}

// names are the pipeline's parameter names as this API spells them.
var names = map[string]string{"max_tokens": "max_output_tokens", "messages": "input", "prompt": "input",
	"response_format": "text.format", "reasoning_effort": "reasoning.effort", "thinking": "reasoning"}

// toPipeline translates the request; history is the conversation of
// previous_response_id (nil without one).
func (r *request) toPipeline(history []pipeline.Message) (*pipeline.Request, *pipeline.Error) {
	if e := r.check(); e != nil {
		return nil, e
	}
	p := &pipeline.Request{ParallelToolCalls: r.ParallelToolCalls == nil || *r.ParallelToolCalls, Names: names,
		Sampling: pipeline.Sampling{MaxTokens: r.MaxOutputTokens, Temperature: r.Temperature, TopP: r.TopP}}
	if r.Instructions != nil && *r.Instructions != "" {
		p.Messages = append(p.Messages, pipeline.Message{Role: pipeline.System, Content: *r.Instructions})
	}
	p.Messages = append(p.Messages, history...)
	msgs, e := readInput(r.Input, history)
	if e != nil {
		return nil, e
	}
	p.Messages = append(p.Messages, msgs...)
	if e := r.readTools(p); e != nil {
		return nil, e
	}
	if e := r.readFormat(p); e != nil {
		return nil, e
	}
	if r.Reasoning != nil && r.Reasoning.Effort != nil {
		switch *r.Reasoning.Effort {
		case "low", "medium", "high":
			p.Reasoning.Effort = *r.Reasoning.Effort
		default:
			return nil, pipeline.Errorf("reasoning.effort", `reasoning.effort %q: want "low", "medium" or "high"`, *r.Reasoning.Effort)
		}
	}
	return p, nil
}

// readTools translates tools, tool_choice and parallel_tool_calls.
func (r *request) readTools(p *pipeline.Request) *pipeline.Error {
	for i, t := range r.Tools {
		f := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return pipeline.Errorf(f+".type", "%s.type %q: only function tools are supported", f, t.Type)
		}
		if t.Name == "" {
			return pipeline.Errorf(f+".name", "%s.name is required", f)
		}
		if !pipeline.IsNull(t.Parameters) && bytes.TrimSpace(t.Parameters)[0] != '{' {
			return pipeline.Errorf(f+".parameters", "%s.parameters must be a JSON Schema object", f)
		}
		p.Tools = append(p.Tools, pipeline.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if pipeline.IsNull(r.ToolChoice) {
		return nil
	}
	var e *pipeline.Error
	p.ToolChoice, e = pipeline.ReadToolChoice(r.ToolChoice, `{"type": "function", "name": ...}`, func(raw json.RawMessage) string {
		var named struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &named) != nil || named.Type != "function" {
			return ""
		}
		return named.Name
	})
	return e
}

// readFormat translates text.format: text, json_object or json_schema.
func (r *request) readFormat(p *pipeline.Request) *pipeline.Error {
	if r.Text == nil || r.Text.Format == nil {
		return nil
	}
	f := r.Text.Format
	switch f.Type {
	case "text":
	case "json_object":
		p.Constraint = &pipeline.Constraint{Kind: pipeline.JSONObject, Param: "text.format"}
	case "json_schema":
		if pipeline.IsNull(f.Schema) {
			return pipeline.Errorf("text.format.schema", "text.format.schema is required for json_schema")
		}
		p.Constraint = &pipeline.Constraint{Kind: pipeline.JSONSchema, Schema: f.Schema, Param: "text.format"}
	default:
		return pipeline.Errorf("text.format.type", `text.format.type %q: want "text", "json_object" or "json_schema"`, f.Type)
	}
	return nil
}
