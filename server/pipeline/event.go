package pipeline

import (
	"context"

	"github.com/troupe-llm/troupe/messages"
)

// Kind is what an Event carries.
type Kind uint8

// The event kinds, in the order a choice produces them: text and reasoning
// deltas and tool calls interleaved, then its finish; Usage once all
// choices are done; Error when a choice fails.
const (
	TextDelta      Kind = iota + 1 // Text: a piece of the answer
	ReasoningDelta                 // Text: a piece of the reasoning
	CallStart                      // Call: a tool call's index, id and name
	CallArgs                       // Call: a piece of the call's arguments (JSON text)
	Finish                         // Finish: the choice is done
	Usage                          // Usage: the token counts of the whole request
	Failed                         // Err: the choice failed
)

// Event is one thing a Run produces.
type Event struct {
	Kind   Kind
	Choice int
	Text   string
	Call   *CallDelta
	// Tokens are the tokens behind a TextDelta or ReasoningDelta event, with their
	// logprobs when asked.
	Tokens []messages.Token
	Finish FinishReason
	// Stop, on a Finish event, is the stop string that ended the choice
	// ("" when something else did).
	Stop  string
	Usage messages.Usage
	Err   *Error
}

// CallDelta is a piece of the call at Index (0-based): CallStart carries
// its ID and Name, CallArgs its Arguments.
type CallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// FinishReason is why a choice ended, in neutral words.
type FinishReason string

// The finish reasons: the model ended its turn (or a stop string matched),
// ran out of tokens, called tools, or failed.
const (
	FinishStop     FinishReason = "stop"
	FinishLength   FinishReason = "length"
	FinishToolCall FinishReason = "tool_calls"
	FinishError    FinishReason = "error"
)

// Run is a generation in flight.
type Run interface {
	// PromptTokens is the length of the rendered, tokenized prompt.
	PromptTokens() int
	// Each calls fn with every event, in order, and returns when the
	// generation is over; the error is the first choice's failure, also
	// passed to fn as a Failed event. Call it once.
	Each(fn func(*Event)) *Error
}

// Runner is the pipeline as a dialect sees it (server.Server).
type Runner interface {
	// Model is the served model's name.
	Model() string
	// Authorized reports whether key is the server's API key, or no key
	// is required.
	Authorized(key string) bool
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes() int64
	// Start admits req, renders and tokenizes its prompt, compiles its
	// grammar, has the runtime check it, and launches it.
	Start(ctx context.Context, req *Request) (Run, *Error)
	// CountTokens renders and tokenizes req's prompt as Start would, and
	// returns its length; nothing is generated.
	CountTokens(req *Request) (int, *Error)
	// Thinks reports whether the chat template reasons apart from its answer.
	Thinks() bool
}
