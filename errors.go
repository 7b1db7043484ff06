package troupe

import (
	"errors"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// The kinds of a request's failure; an *Error wraps one, so errors.Is
// tells them apart.
var (
	// ErrInvalid: a request field is malformed or unsupported (Error.Field
	// names it).
	ErrInvalid = errors.New("invalid request")
	// ErrContextLength: the prompt, or prompt and MaxTokens, exceed the
	// context.
	ErrContextLength = errors.New("context length exceeded")
	// ErrUnavailable: the model is closing or closed.
	ErrUnavailable = errors.New("model unavailable")
	// ErrInternal: a failure of the runtime (a device's, say).
	ErrInternal = errors.New("internal error")
)

// Error is a request's failure: its kind (one of the Err values), the
// request field at fault, in the Go field's name ("Messages",
// "Sampling.Temperature", "JSON.Schema", ...; "" when none), and a
// message.
type Error struct {
	Kind    error
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return "troupe: " + e.Field + ": " + e.Message
	}
	return "troupe: " + e.Message
}

// Unwrap is the error's kind.
func (e *Error) Unwrap() error { return e.Kind }

// fieldNames maps the pipeline's parameter names to the request's Go
// fields.
var fieldNames = map[string]string{
	"messages": "Messages", "prompt": "Prompt", "max_tokens": "Sampling.MaxTokens",
	"temperature": "Sampling.Temperature", "top_p": "Sampling.TopP", "top_k": "Sampling.TopK",
	"min_p": "Sampling.MinP", "stop": "Sampling.Stop", "seed": "Sampling.Seed",
	"tools": "Tools", "tool_choice": "ToolChoice", "response_format": "JSON",
	"response_format.json_schema": "JSON.Schema", "reasoning_effort": "Reasoning.Effort",
	"parallel_tool_calls": "ParallelToolCalls",
	"presence_penalty":    "Sampling.PresencePenalty", "frequency_penalty": "Sampling.FrequencyPenalty",
	"repetition_penalty": "Sampling.RepetitionPenalty", "logit_bias": "Sampling.LogitBias",
	"min_tokens": "Sampling.MinTokens", "typical_p": "Sampling.TypicalP",
	"dry_multiplier": "Sampling.DryMultiplier", "dry_base": "Sampling.DryBase",
	"dry_allowed_length": "Sampling.DryAllowedLength", "dry_penalty_last_n": "Sampling.DryLastN",
	"dry_sequence_breakers": "Sampling.DryBreakers", "xtc_probability": "Sampling.XTCProbability",
	"xtc_threshold": "Sampling.XTCThreshold", "mirostat": "Sampling.Mirostat",
	"mirostat_tau": "Sampling.MirostatTau", "mirostat_eta": "Sampling.MirostatEta",
}

// fromPipeline is the *Error of a pipeline error (Names already applied).
func fromPipeline(e *pipeline.Error) *Error {
	kind := ErrInternal
	switch e.Kind {
	case pipeline.Invalid, pipeline.NotFound, pipeline.TooLarge:
		kind = ErrInvalid
	case pipeline.ContextLength:
		kind = ErrContextLength
	case pipeline.Unavailable, pipeline.Overloaded:
		kind = ErrUnavailable
	}
	return &Error{Kind: kind, Field: e.Param, Message: e.Message}
}
