package toolcall

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/grammar"
)

// Format is a model family's tool-call format, named as vLLM's
// --tool-call-parser names it where vLLM has one. Each format is one value
// of type format, in a file of its own (format_NAME.go), registered in
// formats.
type Format string

const (
	None          Format = ""               // no tool calls: all content
	Hermes        Format = "hermes"         // <tool_call>{"name":..., "arguments":...}</tool_call>: Hermes 2/3, Qwen2.5, Qwen3, Granite 4
	Qwen3Coder    Format = "qwen3_coder"    // <tool_call><function=NAME><parameter=K>V</parameter></function></tool_call>: Qwen3-Coder, Qwen3.5, Nemotron 3 Nano
	Llama3JSON    Format = "llama3_json"    // {"name":..., "parameters":...} and <|python_tag|>: Llama 3.1-3.3
	Mistral       Format = "mistral"        // [TOOL_CALLS][{...}] (Nemo) or [TOOL_CALLS]NAME[ARGS]{...} (Small 3.2, Devstral, Ministral 3)
	OpenAI        Format = "openai"         // gpt-oss harmony: <|channel|>commentary to=functions.NAME ... <|message|>{...}<|call|>
	KimiK2        Format = "kimi_k2"        // <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:i<|tool_call_argument_begin|>{...}...
	GLM45         Format = "glm45"          // <tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>: GLM-4.5/4.6
	Granite       Format = "granite"        // <|tool_call|>[{...}] (Granite 3) and <tool_call> (Granite 4)
	DeepSeekV31   Format = "deepseek_v31"   // <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>
	DeepSeekR1    Format = "deepseek_r1"    // <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>
	FunctionaryV3 Format = "functionary_v3" // v3.2: >>>NAME\n{...} (>>>all\n for text)
	Functionary31 Format = "functionary_v3_llama_3.1"
	FireFunction2 Format = "firefunction_v2" // functools[{...}, ...]
	CommandR7B    Format = "command_r7b"     // <|START_ACTION|>[{"tool_name":..., "parameters":...}]<|END_ACTION|>
	CommandRPlus  Format = "command_r_plus"  // Action: ```json [{"tool_name":..., "parameters":...}] ```
	Gemma4        Format = "gemma4"          // <|tool_call>call:NAME{key:<|"|>text<|"|>,n:1}<tool_call|>
	LFM2          Format = "lfm2"            // <|tool_call_start|>[f(a="x"), g()]<|tool_call_end|> (Python calls)
)

// format is all troupe knows of one tool-call format: its names, how a
// chat template shows it, the blocks its output may hold, its reasoning,
// and how its calls are written (for their grammar).
type format struct {
	name    Format
	aliases []string // other names in use (vLLM's, llama.cpp's)
	// detect lists marker sets: a chat template holding every marker of
	// one set teaches the format. rank orders the formats' checks, as
	// llama.cpp's common_chat_templates does (more specific first).
	detect [][]string
	rank   int
	// markers are the texts that tokenizers often hold as control tokens
	// (llama.cpp's preserved_tokens).
	markers []string
	blocks  []block
	prefix  string // the prompt's tail that the output continues (functionary v3.2's ">>>")
	// think is the reasoning block's pair of markers, "" for none.
	think struct{ open, close string }
	// reasoningMarker shows that a template knows the format's reasoning
	// (think.open, or harmony's analysis channel); "" for none.
	reasoningMarker string
	newID           func() string // the ids the format's templates accept; nil: NewCallID
	dropCalls       bool          // with NoCalls a call is dropped, not read as text (harmony's would be markup)
	// hideContent: a past assistant message's content is not rendered
	// beside its calls when it has reasoning (harmony's template refuses it).
	hideContent bool
	// templateVars are the variables besides tools that the format's chat
	// templates read (nil: none).
	templateVars func(tools []json.RawMessage, now time.Time) map[string]string
	// calls writes the format's calls for its grammar; nil: no grammar.
	// Its argument is the chat template's source (mistral's syntax changed
	// between versions).
	calls func(template string) *callSyntax
	// reasoningGrammar is the reasoning the grammar lets the model write
	// before its calls (nil: the think pair's, thinkGrammar).
	reasoningGrammar func(g *gbuild, open bool, template string) grammar.Expr
	// answer wraps a constrained answer's grammar (nil: the answer is bare).
	answer func(g *gbuild, answer grammar.Expr) grammar.Expr
}

// formats holds every format by name.
var formats = map[Format]*format{}

// register adds f to formats; a format with a think pair gets its blocks.
// Names, aliases and ranks are each one format's.
func register(f *format) {
	for _, d := range formats {
		if d.name == f.name || d.rank == f.rank || slices.ContainsFunc(f.aliases, func(a string) bool { return slices.Contains(d.aliases, a) }) {
			panic(fmt.Sprintf("toolcall: formats %q and %q share a name, an alias or a rank", d.name, f.name))
		}
	}
	if f.think.open != "" {
		f.blocks = append([]block{switchTo(f.think.open, inContent, inReasoning), switchTo(f.think.close, inReasoning, inContent)}, f.blocks...)
		if f.reasoningMarker == "" {
			f.reasoningMarker = f.think.open
		}
	}
	formats[f.name] = f
}

// withThink sets f's reasoning pair.
func withThink(f *format, open, close string) *format {
	f.think.open, f.think.close = open, close
	return f
}

func (f Format) def() *format {
	if d, ok := formats[f]; ok {
		return d
	}
	return &format{}
}

// Lookup finds a format by its name (a --tool-call-parser value).
func Lookup(name string) (Format, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "none" {
		return None, nil
	}
	for _, d := range formats {
		if n == string(d.name) || slices.Contains(d.aliases, n) {
			return d.name, nil
		}
	}
	return None, fmt.Errorf("toolcall: unknown tool-call parser %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the formats' names.
func Names() []string {
	var ns []string
	for f := range formats {
		ns = append(ns, string(f))
	}
	slices.Sort(ns)
	return ns
}

// byRank is the formats in the order Detect checks them.
func byRank() []*format {
	var ds []*format
	for _, d := range formats {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b *format) int { return a.rank - b.rank })
	return ds
}

// Detect picks the format a chat template teaches, from markers in its
// source, in the order llama.cpp's common_chat_templates checks them
// (more specific first). None: the template has no tool calls.
func Detect(src string) Format {
	for _, d := range byRank() {
		for _, set := range d.detect {
			if !slices.ContainsFunc(set, func(m string) bool { return !strings.Contains(src, m) }) {
				return d.name
			}
		}
	}
	return None
}

// Markers returns the texts the format's parser looks for. Where the
// tokenizer holds one as a control token, the server must decode it as its
// text (not drop it, as plain detokenizing does) for the parser to see it;
// the end-of-turn tokens that stop generation need not be.
func (f Format) Markers() []string { return f.def().markers }

// ReasoningMarker returns the text by which a chat template shows that it
// knows the format's reasoning block (the marker that opens it; gpt-oss's
// analysis channel), and false when the format has no reasoning. A
// template that holds it teaches its model to reason apart from the
// answer: the output's reasoning is split out (Result.Reasoning).
func (f Format) ReasoningMarker() (string, bool) {
	m := f.def().reasoningMarker
	return m, m != ""
}

// HidesContentBesideReasonedCalls reports whether the format's chat
// template renders a past assistant message that has reasoning and calls
// without its content (gpt-oss's renders the reasoning as the calls'
// analysis and refuses content beside it, as llama.cpp handles it).
func (f Format) HidesContentBesideReasonedCalls() bool { return f.def().hideContent }

// TemplateVariables returns the variables besides tools that the
// format's chat templates read, as llama.cpp sets them (firefunction v2's
// functions and datetime), given the request's tools and the time; nil for
// none.
func (f Format) TemplateVariables(tools []json.RawMessage, now time.Time) map[string]string {
	if d := f.def(); d.templateVars != nil {
		return d.templateVars(tools, now)
	}
	return nil
}

// PromptOpensReasoning reports whether a rendered prompt ends inside the
// format's reasoning block (its template opened "<think>" for the model).
func PromptOpensReasoning(f Format, prompt string) bool {
	d := f.def()
	if d.think.open == "" {
		return false
	}
	t := strings.TrimRight(prompt, " \t\r\n")
	return strings.HasSuffix(t, d.think.open)
}

// ReasoningMarkers are the markers that open and close f's reasoning
// section (Qwen3's "<think>" and "</think>"); ok is false for a format
// without such a pair (gpt-oss's harmony channels, or no reasoning).
func ReasoningMarkers(f Format) (start, end string, ok bool) {
	d := f.def()
	return d.think.open, d.think.close, d.think.open != ""
}
