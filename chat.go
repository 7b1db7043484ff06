package troupe

import "encoding/json"

// Role is a message's author.
type Role string

// The roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // a tool's result, answering a call
)

// Message is one turn of a conversation.
type Message struct {
	Role    Role
	Content string
	// Reasoning is an assistant's reasoning, given back to templates that
	// show it.
	Reasoning string
	// ToolCalls are an assistant's calls.
	ToolCalls []ToolCall
	// ToolCallID and Name are, on a RoleTool message, the call it answers
	// and the function's name.
	ToolCallID string
	Name       string
}

// ToolCall is one function call; Arguments is a JSON object's text.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Tool is a function offered to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of its arguments (an object's); empty:
	// any object.
	Parameters json.RawMessage
}

// ToolMode says whether the model may call tools.
type ToolMode string

// The tool modes: the model may call a tool (auto, the default with
// tools), must not (none), must call one (required), or must call the one
// ToolChoice.Name names (named). A required or named call is constrained
// by a grammar, so it parses and its arguments match the schema.
const (
	ToolAuto     ToolMode = "auto"
	ToolNone     ToolMode = "none"
	ToolRequired ToolMode = "required"
	ToolNamed    ToolMode = "named"
)

// ToolChoice is a request's tool mode; the zero value is auto.
type ToolChoice struct {
	Mode ToolMode
	Name string // the function ToolNamed names
}

// JSONFormat constrains the output to JSON: a document Schema accepts, or
// any JSON object when Schema is empty.
type JSONFormat struct {
	Schema json.RawMessage
}

// Sampling are the generation parameters; a nil field takes troupe
// serve's default (OpenAI's). Float, Int and Int64 make the pointers.
type Sampling struct {
	MaxTokens   *int     // the most tokens to generate; nil: up to the context
	Temperature *float64 // 0: greedy
	TopP        *float64
	TopK        *int
	MinP        *float64
	Stop        []string // stop strings, not included in the output
	Seed        *int64

	// The penalties, as OpenAI's presence_penalty and frequency_penalty
	// and llama.cpp's repeat_penalty (1: off).
	PresencePenalty, FrequencyPenalty, RepetitionPenalty *float64
	// LogitBias adds to a token's logit; -100 bans it.
	LogitBias map[int32]float64
	// MinTokens is the fewest tokens before an end of generation counts.
	MinTokens *int
	// IgnoreEOS generates past the end-of-generation token.
	IgnoreEOS bool
	// TypicalP is llama.cpp's locally typical sampling (1: off).
	TypicalP *float64
	// DRY is llama.cpp's DRY repetition penalty (DryMultiplier 0: off),
	// with its defaults for the fields left nil.
	DryMultiplier, DryBase     *float64
	DryAllowedLength, DryLastN *int
	DryBreakers                []string
	// XTC is llama.cpp's exclude-top-choices sampler (probability 0: off).
	XTCProbability, XTCThreshold *float64
	// Mirostat is llama.cpp's mirostat (1 or 2; nil or 0: off), with its
	// target surprise Tau (5) and learning rate Eta (0.1).
	Mirostat                 *int
	MirostatTau, MirostatEta *float64
}

// Reasoning asks for the model's reasoning where its template reasons
// apart from its answer: Effort ("low", "medium", "high") where the
// template reads one; Think false turns a thinking template's reasoning
// off.
type Reasoning struct {
	Effort string
	Think  *bool
}

// ChatRequest is a conversation to continue, rendered through the model's
// chat template as troupe serve's /v1/chat/completions renders it.
type ChatRequest struct {
	Messages   []Message
	Tools      []Tool
	ToolChoice ToolChoice
	// ParallelToolCalls lets the model make more than one call.
	ParallelToolCalls bool
	// JSON, when set, constrains the answer to JSON.
	JSON *JSONFormat
	Sampling
	Reasoning Reasoning
	// ContinueFinal leaves the last message, an assistant's, open for the
	// model to continue, instead of starting a new turn.
	ContinueFinal bool
}

// CompletionRequest is a prompt sent as it is (special tokens parsed, BOS
// added as the vocabulary asks).
type CompletionRequest struct {
	Prompt string
	JSON   *JSONFormat
	Sampling
}

// FinishReason is why a generation ended.
type FinishReason string

// The finish reasons: the model ended its turn or a stop string matched,
// it ran out of tokens, or it called tools.
const (
	FinishStop     FinishReason = "stop"
	FinishLength   FinishReason = "length"
	FinishToolCall FinishReason = "tool_calls"
)

// Usage counts a request's tokens.
type Usage struct {
	PromptTokens, CompletionTokens int
}

// Response is a finished generation.
type Response struct {
	Content   string
	Reasoning string
	ToolCalls []ToolCall
	Finish    FinishReason
	// Stop is the stop string that ended it ("" when something else did).
	Stop  string
	Usage Usage
}

// Delta is one piece of a streamed generation: some answer text, some
// reasoning, or a piece of a tool call.
type Delta struct {
	Content   string
	Reasoning string
	// ToolCall, when set, starts call Index (ID and Name set) or adds to
	// its Arguments.
	ToolCall *ToolCallDelta
}

// ToolCallDelta is a piece of the call at Index (0-based).
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Float returns a pointer to v, for Sampling's fields.
func Float(v float64) *float64 { return &v }

// Int returns a pointer to v, for Sampling's fields.
func Int(v int) *int { return &v }

// Int64 returns a pointer to v, for Sampling's fields.
func Int64(v int64) *int64 { return &v }

// Bool returns a pointer to v, for Reasoning.Think.
func Bool(v bool) *bool { return &v }
