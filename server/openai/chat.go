package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// chatRequest is the body of /v1/chat/completions.
type chatRequest struct {
	Common
	Messages            Messages          `json:"messages"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Logprobs            bool              `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	AddGenerationPrompt *bool             `json:"add_generation_prompt"`
	// ContinueFinalMessage (vLLM's) leaves the last message open for the
	// model to continue (an assistant prefill); add_generation_prompt
	// is then false.
	ContinueFinalMessage bool                       `json:"continue_final_message"`
	ChatTemplateKwargs   map[string]json.RawMessage `json:"chat_template_kwargs"`
	ReasoningEffort      *string                    `json:"reasoning_effort"` // the template's reasoning_effort
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    contentField    `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	// An assistant's reasoning, as a client sends it back:
	// reasoning_content (llama-server's, DeepSeek's, troupe's answers) or
	// reasoning (vLLM's newer name).
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"`
}

// toPipeline is the request in the pipeline's terms.
func (req *chatRequest) toPipeline() (*pipeline.Request, *pipeline.Error) {
	p := &pipeline.Request{Sampling: req.Sampling,
		AddGenerationPrompt: req.AddGenerationPrompt, ContinueFinal: req.ContinueFinalMessage, TemplateVars: req.ChatTemplateKwargs,
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls}
	if req.MaxCompletionTokens != nil { // it wins over max_tokens and a valid n_predict
		p.Sampling.MaxTokens = req.MaxCompletionTokens
		p.Names = map[string]string{"max_tokens": "max_completion_tokens"}
		if n := p.Sampling.NPredict; n != nil && (*n == -1 || *n >= 1) {
			p.Sampling.NPredict = nil
		}
	}
	if req.Logprobs {
		p.WantLogprobs = true
		if req.TopLogprobs != nil {
			p.Logprobs = *req.TopLogprobs
		}
		if p.Logprobs < 0 || p.Logprobs > 20 {
			return nil, pipeline.Errorf("top_logprobs", "top_logprobs %d is outside [0, 20]", p.Logprobs)
		}
	} else if req.TopLogprobs != nil {
		return nil, pipeline.Errorf("top_logprobs", "top_logprobs needs logprobs: true")
	}
	if e := req.tools(p); e != nil {
		return nil, e
	}
	var e *pipeline.Error
	if p.Messages, e = req.Messages.ToPipeline(); e != nil {
		return nil, e
	}
	if p.Images, e = req.Messages.images(); e != nil { // images.go
		return nil, e
	}
	if req.ReasoningEffort != nil {
		if *req.ReasoningEffort == "" {
			return nil, pipeline.Errorf("reasoning_effort", `reasoning_effort "": want "low", "medium" or "high"`)
		}
		p.Reasoning.Effort = *req.ReasoningEffort
	}
	return p, nil
}

// Messages are a chat body's messages (also those /tokenize renders).
type Messages []chatMessage

// ToPipeline is the conversation in the pipeline's terms.
func (ms Messages) ToPipeline() ([]pipeline.Message, *pipeline.Error) {
	out := make([]pipeline.Message, len(ms))
	for i, m := range ms {
		calls, err := readToolCalls(m.ToolCalls)
		if err != nil {
			return nil, pipeline.Errorf("messages", "messages[%d].tool_calls: %v", i, err)
		}
		reasoning := m.ReasoningContent
		if reasoning == "" {
			reasoning = m.Reasoning
		}
		out[i] = pipeline.Message{Role: pipeline.Role(m.Role), Content: m.Content.text, Name: m.Name, ToolCallID: m.ToolCallID,
			Reasoning: reasoning, ToolCalls: calls}
	}
	return out, nil
}

// tools sets the request's tools, as they are (the pipeline checks
// them), and its tool_choice: "none", "auto", "required" or a named
// function, which need tools.
func (req *chatRequest) tools(p *pipeline.Request) *pipeline.Error {
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, pipeline.Tool{Raw: t})
	}
	if pipeline.IsNull(req.ToolChoice) {
		return nil
	}
	var e *pipeline.Error
	p.ToolChoice, e = pipeline.ReadToolChoice(req.ToolChoice, `{"type": "function", "function": {"name": ...}}`, func(raw json.RawMessage) string {
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &named) != nil || named.Type != "function" {
			return ""
		}
		return named.Function.Name
	})
	if e != nil {
		return e
	}
	if m := p.ToolChoice.Mode; len(req.Tools) == 0 && (m == pipeline.ToolRequired || m == pipeline.ToolNamed) {
		return pipeline.Errorf("tool_choice", "tool_choice %s needs tools", string(req.ToolChoice))
	}
	return nil
}

// readToolCalls reads an assistant message's tool_calls; a call's
// arguments may be JSON text (OpenAI's) or an object.
func readToolCalls(raw json.RawMessage) ([]pipeline.ToolCall, error) {
	if pipeline.IsNull(raw) {
		return nil, nil
	}
	var calls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, errors.New("expected a list of tool calls")
	}
	out := make([]pipeline.ToolCall, len(calls))
	for i, c := range calls {
		args := string(c.Function.Arguments)
		if pipeline.IsNull(c.Function.Arguments) {
			args = "{}"
		} else if err := json.Unmarshal(c.Function.Arguments, &args); err != nil && c.Function.Arguments[0] != '{' {
			return nil, fmt.Errorf("call %d: arguments must be JSON text or an object", i)
		}
		out[i] = pipeline.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args}
	}
	return out, nil
}

// contentField is a chat message's content: a string, or a list of text
// and image_url parts (their texts are joined with "\n", an image's
// text being pipeline.ImageMarker: images.go).
type contentField struct {
	text   string
	images []imagePart
}

func (c *contentField) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if json.Unmarshal(b, &c.text) == nil {
		return nil
	}
	var parts []struct {
		Type     string    `json:"type"`
		Text     string    `json:"text"`
		ImageURL *imageURL `json:"image_url"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return &pipeline.FieldError{Field: "messages.content", Msg: "expected a string or a list of content parts"}
	}
	texts := make([]string, len(parts))
	for i, p := range parts {
		switch p.Type {
		case "text":
			texts[i] = p.Text
		case "image_url":
			texts[i] = pipeline.ImageMarker
			c.images = append(c.images, imagePart{index: i, url: p.ImageURL})
		default:
			return &pipeline.FieldError{Field: "messages.content", Msg: fmt.Sprintf("content part type %q is not supported (text or image_url)", p.Type)}
		}
	}
	c.text = strings.Join(texts, "\n") // as vLLM and llama-server join them
	return nil
}
