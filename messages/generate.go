package messages

// SamplingParams are one sequence's sampling parameters, as model/sample's
// Params (see there for each field's meaning). The zero value is greedy.
type SamplingParams struct {
	Temperature       float32           `msgpack:"temperature,omitempty"`
	TopK              int               `msgpack:"top_k,omitempty"`
	TopP              float32           `msgpack:"top_p,omitempty"`
	MinP              float32           `msgpack:"min_p,omitempty"`
	RepetitionPenalty float32           `msgpack:"repetition_penalty,omitempty"`
	PresencePenalty   float32           `msgpack:"presence_penalty,omitempty"`
	FrequencyPenalty  float32           `msgpack:"frequency_penalty,omitempty"`
	PenaltyLastN      int               `msgpack:"penalty_last_n,omitempty"` // 0: the whole history
	LogitBias         map[int32]float32 `msgpack:"logit_bias,omitempty"`
	Seed              uint64            `msgpack:"seed,omitempty"`
	HasSeed           bool              `msgpack:"has_seed,omitempty"`
	WantLogprob       bool              `msgpack:"want_logprob,omitempty"`
	Logprobs          int               `msgpack:"logprobs,omitempty"` // top alternatives per token
	MinKeep           int               `msgpack:"min_keep,omitempty"`
	TypicalP          float32           `msgpack:"typical_p,omitempty"`
	XTCProbability    float32           `msgpack:"xtc_probability,omitempty"`
	XTCThreshold      float32           `msgpack:"xtc_threshold,omitempty"`
	DryMultiplier     float32           `msgpack:"dry_multiplier,omitempty"`
	DryBase           float32           `msgpack:"dry_base,omitempty"`
	DryAllowedLength  int               `msgpack:"dry_allowed_length,omitempty"`
	DryPenaltyLastN   int               `msgpack:"dry_penalty_last_n,omitempty"` // -1: the whole history; 0: DRY off
	// DryBreakers are DRY's sequence breakers as the client sent them;
	// DryBreakerTokens the same as token sequences (model/sample's
	// DryBreakers), filled in by the runtime when it admits the request.
	DryBreakers      []string  `msgpack:"dry_breakers,omitempty"`
	DryBreakerTokens [][]int32 `msgpack:"dry_breaker_tokens,omitempty"`
	// Mirostat is llama.cpp's mirostat version (1 or 2; 0: off), with its
	// target surprise tau and learning rate eta (llama.cpp's defaults 5
	// and 0.1 are the front end's to apply). It replaces the sampler chain
	// after logit bias and temperature.
	Mirostat    int     `msgpack:"mirostat,omitempty"`
	MirostatTau float32 `msgpack:"mirostat_tau,omitempty"`
	MirostatEta float32 `msgpack:"mirostat_eta,omitempty"`
	// Infill runs llama.cpp's infill sampler after the truncation samplers
	// (llama-server's samplers list naming "infill", as llama.vim sends it).
	Infill bool `msgpack:"infill,omitempty"`
}

// GenerateRequest asks for completions of one tokenized prompt.
// Client (HTTP front or embedding API) -> request actor.
type GenerateRequest struct {
	RequestID string         `msgpack:"request_id"`
	Prompt    []int32        `msgpack:"prompt"`
	N         int            `msgpack:"n,omitempty"`          // choices; 0 means 1
	MaxTokens int            `msgpack:"max_tokens,omitempty"` // per choice; 0: until the context is full
	Sampling  SamplingParams `msgpack:"sampling"`
	Stop      []string       `msgpack:"stop,omitempty"` // stop strings, not part of the output unless IncludeStopStr
	// IncludeStopStr keeps the stop string that ended a choice at the end of
	// its text (vLLM's include_stop_str_in_output).
	IncludeStopStr bool `msgpack:"include_stop_str,omitempty"`
	// MinTokens is the fewest tokens a choice generates before an
	// end-of-generation token, a stop token or a stop string may end it
	// (vLLM's min_tokens): until then those tokens are banned and stop
	// strings are not looked for.
	MinTokens int `msgpack:"min_tokens,omitempty"`
	// MaxPredictNanos, when positive, bounds a choice's generation time as
	// llama-server's t_max_predict_ms: once it has passed and the text
	// holds a newline, the choice ends with FinishLength.
	MaxPredictNanos int64   `msgpack:"max_predict_nanos,omitempty"`
	StopTokenIDs    []int32 `msgpack:"stop_token_ids,omitempty"` // extra end tokens
	IgnoreEOS       bool    `msgpack:"ignore_eos,omitempty"`
	Priority        int     `msgpack:"priority,omitempty"` // lower runs first, as vLLM
	// Grammar, when set, constrains every choice's output (structured
	// output, tool calls): the runtime masks each step's logits with it.
	Grammar *Grammar `msgpack:"grammar,omitempty"`
	// SpecialText puts control tokens' text (<tool_call>, [TOOL_CALLS],
	// <|channel|>, ...) in the output text instead of dropping it, so a
	// tool-call parser can see them. End-of-generation tokens still end a
	// choice and are never part of the text.
	SpecialText bool `msgpack:"special_text,omitempty"`
	// Speculative, when not nil, sets this request's speculative decoding
	// (llama-server's "speculative" fields); nil: the runtime's settings.
	Speculative *SpeculativeParams `msgpack:"speculative,omitempty"`
	// ReasoningBudget, when set, bounds each reasoning section of every
	// choice (llama-server's reasoning_budget_tokens, Anthropic's
	// thinking.budget_tokens).
	ReasoningBudget *ReasoningBudget `msgpack:"reasoning_budget,omitempty"`
	// LoRA, when not nil, is the adapters this request runs with
	// (llama-server's "lora": [{id, scale}]): each ID indexes the runtime's
	// loaded adapters, and the adapters it leaves out get scale 0, so an
	// empty, non-nil list runs the base model. nil: every loaded adapter
	// at its default scale (--lora's). It has no omitempty: an empty list
	// must not decode as nil.
	LoRA []LoRARef `msgpack:"lora"`
	// Images are the prompt's images, in prompt order, not overlapping
	// (see ImageInput); the runtime encodes them before the request's
	// sequences enter the schedule.
	Images []ImageInput `msgpack:"images,omitempty"`
}

// LoRARef is one adapter of a request: its index among the runtime's
// loaded adapters and its scale.
type LoRARef struct {
	ID    int     `msgpack:"id"`
	Scale float32 `msgpack:"scale"`
}

// SpeculativeParams are one request's speculative-decoding settings, as
// llama-server's request fields. Zero fields take the runtime's values.
type SpeculativeParams struct {
	Off  bool    `msgpack:"off,omitempty"`   // "speculative": false
	NMax int     `msgpack:"n_max,omitempty"` // speculative.n_max: most draft tokens per step
	NMin int     `msgpack:"n_min,omitempty"` // speculative.n_min: a shorter draft is not proposed
	PMin float32 `msgpack:"p_min,omitempty"` // speculative.p_min: a draft model's least probability to go on
}

// ReasoningBudget bounds the reasoning sections of a choice, as llama.cpp's
// reasoning budget sampler: a section opens with Start (also when the
// prompt ends inside one: the template opened it) and closes with End;
// once it holds Tokens tokens, the runtime forces Message and End, one
// token per step, so the model goes on to its answer. A new Start opens a
// new section with a fresh budget. The markers are text as the template
// writes them (special tokens' text included), tokenized by the runtime.
type ReasoningBudget struct {
	Tokens  int    `msgpack:"tokens"`            // 0: a section is closed as soon as it opens
	Start   string `msgpack:"start"`             // "<think>"
	End     string `msgpack:"end"`               // "</think>"
	Message string `msgpack:"message,omitempty"` // forced before End (llama-server's reasoning_budget_message)
}

// Grammar is the source of a constraint on a request's output, compiled by
// the runtime (grammar) and cached by Kind and Source.
type Grammar struct {
	Kind string `msgpack:"kind"` // one of the Grammar* kinds
	// Source is the JSON Schema, the regular expression, the GBNF text, or
	// the choices as a JSON array of strings; "" for GrammarJSONObject.
	Source string `msgpack:"source,omitempty"`
}

// Grammar kinds.
const (
	GrammarJSONSchema = "json_schema" // a JSON Schema (OpenAI strict subset and more)
	GrammarJSONObject = "json_object" // any JSON object
	GrammarRegex      = "regex"       // a regular expression over the whole output
	GrammarChoice     = "choice"      // exactly one of a list of strings
	GrammarGBNF       = "gbnf"        // llama.cpp's grammar format
)

// Finish reasons, as OpenAI's finish_reason where one exists.
const (
	FinishStop      = "stop"      // an end-of-generation token, a stop token or a stop string
	FinishLength    = "length"    // max tokens or the context length
	FinishCancelled = "cancelled" // Cancel, or the client went away
	FinishError     = "error"     // Err says why
)

// TokenLogprob is one alternative token and its log-probability.
type TokenLogprob struct {
	ID      int32   `msgpack:"id"`
	Logprob float32 `msgpack:"logprob"`
}

// Token is one generated token, with its log-probability and the most likely
// alternatives when they were asked for.
type Token struct {
	ID      int32          `msgpack:"id"`
	Logprob float32        `msgpack:"logprob,omitempty"`
	Top     []TokenLogprob `msgpack:"top,omitempty"`
}

// Usage counts a request's tokens, as OpenAI's usage, and how often its
// choices were preempted.
type Usage struct {
	PromptTokens     int `msgpack:"prompt_tokens"`
	CompletionTokens int `msgpack:"completion_tokens"`
	CachedTokens     int `msgpack:"cached_tokens"` // prompt tokens found in the prefix cache
	// Preemptions is the times its choices lost their place (see Preempted),
	// summed over the choices.
	Preemptions int `msgpack:"preemptions,omitempty"`
	// DraftTokens and AcceptedDraftTokens count the speculative draft
	// tokens verified for its choices, and those accepted.
	DraftTokens         int `msgpack:"draft_tokens,omitempty"`
	AcceptedDraftTokens int `msgpack:"accepted_draft_tokens,omitempty"`
}

// OutputChunk is new output of one choice of a request: tokens and the text
// they complete (stop strings held back until they cannot match, and never
// sent). The last chunk of a choice has FinishReason set; the last chunk of
// the request has Done and Usage set (Index is then -1 if it carries no
// output of its own). Request actor -> client.
type OutputChunk struct {
	RequestID    string  `msgpack:"request_id"`
	Index        int     `msgpack:"index"`
	Tokens       []Token `msgpack:"tokens,omitempty"`
	Text         string  `msgpack:"text,omitempty"`
	FinishReason string  `msgpack:"finish_reason,omitempty"`
	Err          string  `msgpack:"err,omitempty"`
	// Invalid, with FinishError, says the request is at fault, not the
	// server: its grammar passed a bound some tokens in (a 400 when
	// nothing has been sent yet).
	Invalid bool   `msgpack:"invalid,omitempty"`
	Done    bool   `msgpack:"done,omitempty"`
	Usage   *Usage `msgpack:"usage,omitempty"`
	// QueueNanos, on a choice's first chunk, is how long it waited in the
	// scheduler's queue before it first ran.
	QueueNanos int64 `msgpack:"queue_nanos,omitempty"`
	// Preemptions, on a choice's last chunk, is the times that choice lost
	// its place (see Preempted).
	Preemptions int `msgpack:"preemptions,omitempty"`
	// StopString, on a choice's last chunk, is the stop string that ended
	// it (FinishStop); "" when something else did.
	StopString string `msgpack:"stop_string,omitempty"`
}

// SequenceOutput is new output of one sequence. Sequence -> its request.
type SequenceOutput struct {
	SeqID           uint64  `msgpack:"seq_id"`
	Index           int     `msgpack:"index"`
	Tokens          []Token `msgpack:"tokens,omitempty"`
	Text            string  `msgpack:"text,omitempty"`
	FinishReason    string  `msgpack:"finish_reason,omitempty"`
	Err             string  `msgpack:"err,omitempty"`
	Invalid         bool    `msgpack:"invalid,omitempty"`           // the request's fault (see OutputChunk.Invalid)
	NumCachedTokens int     `msgpack:"num_cached_tokens,omitempty"` // prompt tokens found cached
	QueueNanos      int64   `msgpack:"queue_nanos,omitempty"`       // time it waited to be scheduled (first output)
	Preemptions     int     `msgpack:"preemptions,omitempty"`       // times it was preempted since its previous output
	StopString      string  `msgpack:"stop_string,omitempty"`       // the stop string that ended it (FinishStop)
	Drafted         int     `msgpack:"drafted,omitempty"`           // draft tokens verified since its previous output
	Accepted        int     `msgpack:"accepted,omitempty"`          // of those, accepted
}

// Cancel stops a request or a sequence wherever it is, and frees its blocks
// at once. Client -> request (RequestID); request -> sequence; sequence ->
// batcher (SeqID), also when the sequence stops itself on a stop string.
type Cancel struct {
	RequestID string `msgpack:"request_id,omitempty"`
	SeqID     uint64 `msgpack:"seq_id,omitempty"`
	Reason    string `msgpack:"reason,omitempty"`
}
