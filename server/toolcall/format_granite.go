package toolcall

// Granite 3 writes <|tool_call|>[{...}]; Granite 4 writes hermes' <tool_call>.
func init() {
	register(withThink(&format{name: Granite, rank: 160,
		detect:  [][]string{{"<|tool_call|>"}},
		markers: []string{"<think>", "</think>", "<tool_call>", "</tool_call>", "<|tool_call|>"},
		blocks:  []block{hermesBlock, jsonArray("<|tool_call|>", inContent)},
		calls:   fixed(jsonCalls("<|tool_call|>[", ", ", "]", jsonCall("name", "arguments"))),
	}, "<think>", "</think>"))
}
