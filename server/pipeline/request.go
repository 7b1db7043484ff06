package pipeline

import (
	"encoding/json"

	"github.com/troupe-llm/troupe/messages"
)

// Request is one generation call, whatever API it came from. Exactly one
// of Messages (a conversation, rendered with the model's chat template),
// Prompt (text sent as it is) and Prompts is set.
type Request struct {
	Messages []Message
	Prompt   *Prompt
	// Prompts are several prompts (completions' list of prompts), each
	// generating its own choices: choice i*N+j is prompt i's j-th.
	Prompts []Prompt
	// Suffix, with text prompts, makes each prompt the prefix of a
	// fill-in-the-middle prompt whose suffix it is (the model's FIM
	// tokens); param "suffix".
	Suffix *string
	// Echo has the Run send each choice's prompt text first (Echo events).
	Echo bool
	// DefaultMaxTokens is the token limit of a request whose sampling sets
	// none; 0: the rest of the context.
	DefaultMaxTokens int
	// ContextLimit, when > 0, is the context the request may use (at most
	// the served one, which the dialect checks).
	ContextLimit int
	// Context are the tokens of an earlier exchange the prompt continues
	// (Ollama's context): they come first, and the prompt gets no BOS of
	// its own. One prompt only.
	Context []int32
	// ParseReasoning has a prompt's output parsed for reasoning, as a
	// conversation's is (a thinking model's raw prompt).
	ParseReasoning bool
	// WantPromptIDs has the Usage event carry the prompt's tokens.
	WantPromptIDs bool
	// Sampler, when set, are the sampler's parameters as the dialect
	// resolved them (its API's own defaults and ranges: Ollama's
	// options). Sampling's table is then not applied: only its Stop is
	// read, which the dialect has checked.
	Sampler *messages.SamplingParams
	// Ignored names request fields the dialect accepts and does not apply
	// (the server logs them).
	Ignored []string
	// ContinueFinal leaves the last message, an assistant's, open for the
	// model to continue (a prefill), instead of adding a generation prompt.
	ContinueFinal bool
	// AddGenerationPrompt, when set, overrides whether the template adds
	// the assistant's generation prompt (default: it does).
	AddGenerationPrompt *bool
	// TemplateVars are extra variables for the chat template
	// (chat_template_kwargs), each a JSON value.
	TemplateVars map[string]json.RawMessage
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
	// Images are the request's images, in the order of the ImageMarkers
	// the dialect wrote into the messages' Content (or Prompt's Text).
	Images []Image
}

// Prompt is a prompt sent as it is: text (BOS added as the vocabulary
// asks, special tokens parsed), or token ids.
type Prompt struct {
	Text string
	IDs  []int32 // when set, the prompt's tokens; Text is not read
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
	// StringContent renders an empty content as "" rather than None
	// beside tool calls (Ollama's messages).
	StringContent bool
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
	// Raw, when set, is the tool as the client sent it in OpenAI's shape
	// ({"type": "function", "function": {...}}), which chat templates
	// read: it is checked and rendered as it is (its keys in the client's
	// order), and the fields above are not read. Set it on all tools of
	// a request or none.
	Raw json.RawMessage
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

// ReadToolChoice reads OpenAI's tool_choice: "none", "auto", "required",
// or the object that names a function, shape as the API writes it (for the
// errors), whose name named reads ("" when raw is not that object).
func ReadToolChoice(raw json.RawMessage, shape string, named func(raw json.RawMessage) string) (ToolChoice, *Error) {
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "none", "auto", "required":
			return ToolChoice{Mode: ToolMode(mode)}, nil
		}
		return ToolChoice{}, Errorf("tool_choice", `tool_choice %q: want "none", "auto", "required" or %s`, mode, shape)
	}
	name := named(raw)
	if name == "" {
		return ToolChoice{}, Errorf("tool_choice", `tool_choice must be "none", "auto", "required" or %s`, shape)
	}
	return ToolChoice{Mode: ToolNamed, Name: name}, nil
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
// defaults (serve's --temp...), then OpenAI's. Every dialect maps its
// fields here, so that each is checked against one table (its range, its
// 400 naming the field) whatever API it came in. The JSON names are
// OpenAI's, vLLM's and llama-server's, which the OpenAI dialect decodes
// as they are; errors name these, and Request.Names renames them.
type Sampling struct {
	MaxTokens         *int               `json:"max_tokens"`
	Temperature       *float64           `json:"temperature"`
	TopP              *float64           `json:"top_p"`
	TopK              *int               `json:"top_k"`
	MinP              *float64           `json:"min_p"`
	N                 *int               `json:"n"` // choices; nil: 1
	Stop              StopList           `json:"stop"`
	StopTokenIDs      []int32            `json:"stop_token_ids"`
	Seed              *int64             `json:"seed"`
	PresencePenalty   *float64           `json:"presence_penalty"`
	FrequencyPenalty  *float64           `json:"frequency_penalty"`
	RepetitionPenalty *float64           `json:"repetition_penalty"`
	LogitBias         map[string]float64 `json:"logit_bias"` // token id (decimal text) to bias; -100 bans
	IgnoreEOS         bool               `json:"ignore_eos"`
	Priority          int                `json:"priority"`
	Formats
	LlamaSampling
}

// Formats are the fields that constrain the output to a format, as the
// APIs name them (OpenAI's response_format, vLLM's structured_outputs and
// guided_*, llama-server's grammar and json_schema), each as its JSON
// value; at most one may be set. Request.Constraint is the typed form
// the other dialects use.
type Formats struct {
	ResponseFormat    json.RawMessage `json:"response_format"`
	StructuredOutputs json.RawMessage `json:"structured_outputs"`
	GuidedJSON        json.RawMessage `json:"guided_json"`
	GuidedRegex       json.RawMessage `json:"guided_regex"`
	GuidedChoice      json.RawMessage `json:"guided_choice"`
	GuidedGrammar     json.RawMessage `json:"guided_grammar"`
	Grammar           json.RawMessage `json:"grammar"`
	JSONSchema        json.RawMessage `json:"json_schema"`
}

// LlamaSampling are the fields llama-server and vLLM take beyond OpenAI's,
// and the ones refused by name (best_of > 1, use_beam_search, mirostat):
// a client that sends them must not get output that ignored them.
type LlamaSampling struct {
	NPredict       *int     `json:"n_predict"`  // llama-server's max_tokens; -1: until the context is full
	MinTokens      *int     `json:"min_tokens"` // vLLM's
	IncludeStopStr bool     `json:"include_stop_str_in_output"`
	TypicalP       *float64 `json:"typical_p"`
	MinKeep        *int     `json:"min_keep"`
	XTCProbability *float64 `json:"xtc_probability"`
	XTCThreshold   *float64 `json:"xtc_threshold"`
	DryMultiplier  *float64 `json:"dry_multiplier"`
	DryBase        *float64 `json:"dry_base"`
	DryAllowedLen  *int     `json:"dry_allowed_length"`
	DryLastN       *int     `json:"dry_penalty_last_n"`
	DryBreakers    []string `json:"dry_sequence_breakers"` // absent (nil): llama.cpp's; [] is a 400

	TMaxPredictMS *int `json:"t_max_predict_ms"` // llama-server's generation deadline

	BestOf        *int     `json:"best_of"`
	UseBeamSearch bool     `json:"use_beam_search"`
	Mirostat      *int     `json:"mirostat"`
	MirostatTau   *float64 `json:"mirostat_tau"` // inert, as llama.cpp's, while mirostat is 0
	MirostatEta   *float64 `json:"mirostat_eta"`

	// llama-server's reasoning budget (chat only, where the template
	// reasons): tokens inside the reasoning section before its end is
	// forced (-1: no budget), and the text forced before the end.
	ReasoningBudgetTokens  *int    `json:"reasoning_budget_tokens"`
	ThinkingBudgetTokens   *int    `json:"thinking_budget_tokens"` // llama-server's alias
	ReasoningBudgetMessage *string `json:"reasoning_budget_message"`

	// LoRA is llama-server's per-request adapter list, [{"id", "scale"}]:
	// ids index the loaded adapters (GET /lora-adapters), the ones left out
	// get scale 0; absent, every adapter at its default scale.
	LoRA json.RawMessage `json:"lora"`

	// Speculative decoding (llama-server's fields): false turns it off for
	// the request; the others bound the draft length and its confidence.
	Speculative *bool    `json:"speculative"`
	SpecNMax    *int     `json:"speculative.n_max"`
	SpecNMin    *int     `json:"speculative.n_min"`
	SpecPMin    *float64 `json:"speculative.p_min"`
}

// StopList is OpenAI's stop: a string or a list of strings.
type StopList []string

// UnmarshalJSON reads a string or a list of strings.
func (s *StopList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = StopList{one}
		return nil
	}
	var list []string
	if json.Unmarshal(b, &list) == nil {
		*s = list
		return nil
	}
	return &FieldError{"stop", "expected a string or a list of strings"}
}

// Reasoning asks for the model's reasoning: Effort ("low", "medium",
// "high") sets the template's reasoning_effort where it reads one; Think
// false turns a thinking template's reasoning off (enable_thinking).
type Reasoning struct {
	Effort string
	Think  *bool
	// BudgetTokens bounds the tokens inside the reasoning section: past
	// it, BudgetMessage and the section's end are forced (Anthropic's
	// thinking.budget_tokens). nil: no bound.
	BudgetTokens  *int
	BudgetMessage string
	// EffortIfRead sets Effort only where the template reads it, instead
	// of refusing it elsewhere (Ollama's think levels).
	EffortIfRead bool
}
