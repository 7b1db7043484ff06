package toolcall

// markers lists, per format, the marker texts that tokenizers often hold as
// control tokens (llama.cpp's preserved_tokens).
var markers = map[Format][]string{
	Hermes:        {"<think>", "</think>", "<tool_call>", "</tool_call>"},
	Qwen3Coder:    {"<think>", "</think>", "<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>"},
	GLM45:         {"<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"},
	Granite:       {"<think>", "</think>", "<tool_call>", "</tool_call>", "<|tool_call|>"},
	Llama3JSON:    {"<|python_tag|>"},
	Functionary31: {"<|python_tag|>", "<function="},
	FunctionaryV3: {">>>"},
	Mistral:       {"[THINK]", "[/THINK]", "[TOOL_CALLS]", "[CALL_ID]", "[ARGS]"},
	OpenAI:        {"<|channel|>", "<|constrain|>", "<|message|>", "<|start|>", "<|end|>"},
	KimiK2: {"<think>", "</think>", "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
		"<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"},
	DeepSeekR1: {"<think>", "</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>",
		"<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"},
	FireFunction2: {"functools"},
	CommandR7B: {"<|START_THINKING|>", "<|END_THINKING|>", "<|START_ACTION|>", "<|END_ACTION|>",
		"<|START_RESPONSE|>", "<|END_RESPONSE|>"},
	CommandRPlus: {"Action:"},
	Gemma4:       {"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", `<|"|>`},
	LFM2:         {"<think>", "</think>", "<|tool_call_start|>", "<|tool_call_end|>"},
}

func init() { markers[DeepSeekV31] = markers[DeepSeekR1] }

// Markers returns the texts the format's parser looks for. Where the
// tokenizer holds one as a control token, the server must decode it as its
// text (not drop it, as plain detokenizing does) for the parser to see it;
// the end-of-turn tokens that stop generation need not be.
func (f Format) Markers() []string { return markers[f] }
