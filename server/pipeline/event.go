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
	Failed                         // Err: the choice failed; Text: the runtime's own words for it
	// Chunk closes the deltas of one runtime chunk of a choice (sent after
	// them, also when the parser held all their text back): Tokens are the
	// chunk's tokens, Logprobs their log-probabilities when asked. A
	// dialect that reports logprobs per piece of its stream groups by it.
	Chunk
	// Echo comes first, per choice, when the request asks Echo: Text is
	// the choice's prompt.
	Echo
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
	// Logprobs, on a Chunk event of a request with WantLogprobs, are its
	// tokens' log-probabilities and alternatives.
	Logprobs []TokenLogprob
	Finish   FinishReason
	// Parsed, on a Finish event, says the choice's output went through the
	// tool-call or reasoning parser: a dialect answering at once trims the
	// space around the whole content and reasoning, as the parser does.
	Parsed bool
	// Stop, on a Finish event, is the stop string that ended the choice
	// ("" when something else did).
	Stop  string
	Usage messages.Usage
	// Timings, on the Usage event, are the request's timings.
	Timings *Timings
	// Prompt, on the Usage event of a request with WantPromptIDs, is its
	// (first) prompt's tokens.
	Prompt []int32
	Err    *Error
}

// TokenLogprob is one generated token: its text (its bytes, which may be
// part of a character), its log-probability (-Inf possible) and, in Top,
// the alternatives asked for.
type TokenLogprob struct {
	Text    string
	Bytes   []byte
	Logprob float32
	Top     []TokenLogprob
}

// Timings are llama-server's "timings" object, with troupe's queue_ms.
// Times are in milliseconds from when the server read the request:
// queue_ms in the scheduler's queue (the longest of its choices),
// prompt_ms from then to the first token (the prefill of the prompt
// tokens not found cached), predicted_ms from the first token to the last.
type Timings struct {
	QueueMs             float64 `json:"queue_ms"`
	CacheN              int     `json:"cache_n"`
	PromptN             int     `json:"prompt_n"`
	PromptMs            float64 `json:"prompt_ms"`
	PromptPerTokenMs    float64 `json:"prompt_per_token_ms"`
	PromptPerSecond     float64 `json:"prompt_per_second"`
	PredictedN          int     `json:"predicted_n"`
	PredictedMs         float64 `json:"predicted_ms"`
	PredictedPerTokenMs float64 `json:"predicted_per_token_ms"`
	PredictedPerSecond  float64 `json:"predicted_per_second"`
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
