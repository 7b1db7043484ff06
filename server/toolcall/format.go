package toolcall

import (
	"fmt"
	"sort"
	"strings"
)

// Format is a model family's tool-call format, named as vLLM's
// --tool-call-parser names it where vLLM has one.
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

// format is a Format's definition: the blocks its output may hold.
type format struct {
	blocks     []block
	prefix     string        // the prompt's tail that the output continues (functionary v3.2's ">>>")
	reasoning  bool          // the format has a reasoning block
	thinkStart string        // the marker that opens it, for PromptOpensReasoning
	newID      func() string // the ids the format's templates accept; nil: NewCallID
	dropCalls  bool          // with NoCalls a call is dropped, not read as text (harmony's would be markup)
}

var formats = map[Format]*format{}

func register(f Format, d *format) { formats[f] = d }

func (f Format) def() *format {
	if d, ok := formats[f]; ok {
		return d
	}
	return &format{}
}

// aliases maps other names in use (vLLM's, llama.cpp's) to a Format.
var aliases = map[string]Format{
	"qwen":                 Hermes,
	"qwen3":                Hermes,
	"qwen2_5":              Hermes,
	"granite4":             Hermes,
	"llama3":               Llama3JSON,
	"llama4_json":          Llama3JSON,
	"llama":                Llama3JSON,
	"qwen3_xml":            Qwen3Coder,
	"gpt-oss":              OpenAI,
	"gpt_oss":              OpenAI,
	"harmony":              OpenAI,
	"kimi":                 KimiK2,
	"glm4_moe":             GLM45,
	"glm46":                GLM45,
	"glm":                  GLM45,
	"deepseek_v3":          DeepSeekV31,
	"deepseek_r1":          DeepSeekR1,
	"deepseek":             DeepSeekR1,
	"functionary":          FunctionaryV3,
	"functionary_v3_2":     FunctionaryV3,
	"functionary_v3_1":     Functionary31,
	"firefunction":         FireFunction2,
	"command_r":            CommandR7B,
	"command-r7b":          CommandR7B,
	"mistral_nemo":         Mistral,
	"magistral":            Mistral,
	"none":                 None,
	"pythonic":             LFM2,
	"lfm2.5":               LFM2,
	"gemma":                Gemma4,
	"functionary_v3_llama": Functionary31,
}

// Lookup finds a format by its name (a --tool-call-parser value).
func Lookup(name string) (Format, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if _, ok := formats[Format(n)]; ok {
		return Format(n), nil
	}
	if f, ok := aliases[n]; ok {
		return f, nil
	}
	return None, fmt.Errorf("toolcall: unknown tool-call parser %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the formats' names.
func Names() []string {
	var ns []string
	for f := range formats {
		ns = append(ns, string(f))
	}
	sort.Strings(ns)
	return ns
}

// Detect picks the format a chat template teaches, from markers in its
// source, in the order llama.cpp's common_chat_templates checks them
// (more specific first). None: the template has no tool calls.
func Detect(src string) Format {
	has := func(s ...string) bool {
		for _, x := range s {
			if !strings.Contains(src, x) {
				return false
			}
		}
		return true
	}
	switch {
	case has("<|channel|>"):
		return OpenAI
	case has(">>>all"):
		return FunctionaryV3
	case has("<|tool_calls_section_begin|>", "<|tool_call_begin|>"):
		return KimiK2
	case has("<|START_ACTION|>"):
		return CommandR7B
	case has("'<|tool_call>call:'"):
		return Gemma4
	case has("<|tool_list_start|>"), has("List of tools: ["):
		return LFM2
	case has(`Action:\n` + "```json"):
		return CommandRPlus
	case has("[TOOL_CALLS]"):
		return Mistral
	case has("<tool_call>", "<function=", "<parameter="):
		return Qwen3Coder
	case has("<tool_call>", "<arg_key>"):
		return GLM45
	case has("<｜tool▁call▁begin｜>", "['name'] + '<｜tool▁sep｜>'"):
		return DeepSeekV31
	case has("<｜tool▁call▁begin｜>"):
		return DeepSeekR1
	case has(" functools["):
		return FireFunction2
	case has("<|start_header_id|>", "<function="):
		return Functionary31
	case has("<|start_header_id|>ipython<|end_header_id|>"), has("<|python_tag|>"):
		return Llama3JSON
	case has("<|tool_call|>"):
		return Granite
	case has("<tool_call>"):
		return Hermes
	}
	return None
}
