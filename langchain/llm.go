package langchain

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-llm/troupe"
)

// LLM is a troupe.Model as langchaingo's llms.Model.
type LLM struct {
	m *troupe.Model
}

var _ llms.Model = (*LLM)(nil)

// New returns an LLM over m; m stays the caller's to close.
func New(m *troupe.Model) *LLM { return &LLM{m: m} }

// Call generates an answer to a single prompt, sent as a user message.
func (l *LLM) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, l, prompt, options...)
}

// GenerateContent continues the conversation in messages. Options are
// langchaingo's: MaxTokens, Temperature (always passed: 0 is greedy, as
// langchaingo's OpenAI client sends it), TopP, TopK, Seed, StopWords,
// JSONMode (or ResponseMIMEType "application/json"), Tools or Functions
// with ToolChoice or FunctionCallBehavior, StreamingFunc and
// StreamingReasoningFunc. Model and Metadata are not troupe's to read and
// are left alone; the others are refused when set.
func (l *LLM) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	req, err := request(messages, &o)
	if err != nil {
		return nil, err
	}
	resp, err := l.m.ChatStream(ctx, req, streamer(ctx, &o))
	if err != nil {
		return nil, err
	}
	choice := &llms.ContentChoice{Content: resp.Content, StopReason: string(resp.Finish), ReasoningContent: resp.Reasoning,
		GenerationInfo: map[string]any{
			"PromptTokens": resp.Usage.PromptTokens, "CompletionTokens": resp.Usage.CompletionTokens,
			"TotalTokens": resp.Usage.PromptTokens + resp.Usage.CompletionTokens,
		}}
	for _, c := range resp.ToolCalls {
		call := llms.ToolCall{ID: c.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: c.Arguments}}
		choice.ToolCalls = append(choice.ToolCalls, call)
	}
	if len(choice.ToolCalls) > 0 {
		choice.FuncCall = choice.ToolCalls[0].FunctionCall // for callers of the legacy field
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}, nil
}

// streamer passes each piece of the answer to o's streaming functions
// (nil: none is set).
func streamer(ctx context.Context, o *llms.CallOptions) func(troupe.Delta) error {
	if o.StreamingFunc == nil && o.StreamingReasoningFunc == nil {
		return nil
	}
	return func(d troupe.Delta) error {
		if d.Content == "" && d.Reasoning == "" {
			return nil // a tool call's piece: the response carries the calls
		}
		if o.StreamingReasoningFunc != nil {
			if err := o.StreamingReasoningFunc(ctx, []byte(d.Reasoning), []byte(d.Content)); err != nil {
				return err
			}
		}
		if o.StreamingFunc != nil && d.Content != "" {
			return o.StreamingFunc(ctx, []byte(d.Content))
		}
		return nil
	}
}

// unsupported returns the error for the first option set that troupe
// cannot honour.
func unsupported(o *llms.CallOptions) error {
	for _, c := range []struct {
		set  bool
		name string
	}{
		{o.CandidateCount > 1 || o.N > 1, "CandidateCount/N (one candidate per call)"},
		{o.RepetitionPenalty != 0, "RepetitionPenalty"},
		{o.FrequencyPenalty != 0, "FrequencyPenalty"},
		{o.PresencePenalty != 0, "PresencePenalty"},
		{o.MinLength != 0, "MinLength"},
		{o.MaxLength != 0, "MaxLength"},
		{o.ResponseMIMEType != "" && o.ResponseMIMEType != "application/json", "ResponseMIMEType " + o.ResponseMIMEType},
	} {
		if c.set {
			return fmt.Errorf("langchain: option %s is not supported by troupe", c.name)
		}
	}
	return nil
}
