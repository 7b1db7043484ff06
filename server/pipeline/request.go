package pipeline

import "encoding/json"

// Request is one generation call, whatever API it came from. Exactly one
// of Messages (a conversation, rendered with the model's chat template) and
// Prompt (text sent as it is) is set.
type Request struct {
	Messages []Message
	Prompt   *Prompt
	// ContinueFinal leaves the last message, an assistant's, open for the
	// model to continue (a prefill), instead of adding a generation prompt.
	ContinueFinal bool
	// Tools are the functions offered to the model; ToolChoice says whether
	// it may, must or must not call them.
	Tools      []Tool
	ToolChoice ToolChoice
	// ParallelToolCalls lets the model make more than one call.
	ParallelToolCalls bool
	// Constraint, when set, constrains the output to JSON.
	Constraint *Constraint
	Sampling   Sampling
	Reasoning  Reasoning
	// Logprobs is the number of alternatives per token to report; -1 or 0
	// with WantLogprobs false: none.
	WantLogprobs bool
	Logprobs     int
	// Names maps the pipeline's parameter names (OpenAI chat's: "messages",
	// "max_tokens", "stop", "temperature", "tools", "tool_choice",
	// "response_format", "reasoning_effort"...) to the dialect's, so that an
	// Error's Param names the field the client sent.
	Names map[string]string
}

// Prompt is a prompt sent as it is: text (BOS added as the vocabulary
// asks, special tokens parsed).
type Prompt struct {
	Text string
}

// Role is a message's author.
type Role string

// The roles a conversation has; dialects map theirs onto these.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	ToolRole  Role = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	Role    Role
	Content string
	// Reasoning is an assistant's reasoning, given back to the template.
	Reasoning string
	// ToolCalls are an assistant's calls.
	ToolCalls []ToolCall
	// ToolCallID and Name are, on a tool message, the call it answers and
	// the function's name.
	ToolCallID string
	Name       string
}

// ToolCall is one function call: Arguments is a JSON object's text.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Tool is a function offered to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of its arguments (an object's), or
	// empty.
	Parameters json.RawMessage
}

// ToolMode is what ToolChoice asks.
type ToolMode string

// The tool modes: the model may call (auto), must not (none), must call
// some tool (required) or the named one (named).
const (
	ToolAuto     ToolMode = "auto"
	ToolNone     ToolMode = "none"
	ToolRequired ToolMode = "required"
	ToolNamed    ToolMode = "named"
)

// ToolChoice is the request's tool choice; the zero value is auto with
// tools, none without.
type ToolChoice struct {
	Mode ToolMode
	Name string // the function ToolNamed names
}

// ConstraintKind is the kind of JSON a Constraint asks for.
type ConstraintKind uint8

// JSONObject: any JSON object; JSONSchema: a document the schema accepts.
const (
	JSONObject ConstraintKind = iota + 1
	JSONSchema
)

// Constraint constrains the output to JSON. Param names the field it came
// from, for errors.
type Constraint struct {
	Kind   ConstraintKind
	Schema json.RawMessage
	Param  string
}

// Sampling are the generation parameters. Nil fields take the server's
// defaults (serve's --temp...), then OpenAI's. Fields other dialects add
// (typical_p, DRY, XTC, ...) belong here too, so that every dialect maps
// them the same way.
type Sampling struct {
	MaxTokens   *int
	Temperature *float64
	TopP        *float64
	TopK        *int
	MinP        *float64
	Stop        []string
	Seed        *int64
}

// Reasoning asks for the model's reasoning: Effort ("low", "medium",
// "high") sets the template's reasoning_effort where it reads one; Think
// false turns a thinking template's reasoning off (enable_thinking).
type Reasoning struct {
	Effort string
	Think  *bool
}
