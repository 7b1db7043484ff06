package toolcall

// LFM2 writes Python calls, f(k=v, ...), a list of them.
func init() {
	register(withThink(&format{name: LFM2, rank: 60,
		aliases: []string{"pythonic", "lfm2.5"},
		detect:  [][]string{{"<|tool_list_start|>"}, {"List of tools: ["}},
		markers: []string{"<think>", "</think>", "<|tool_call_start|>", "<|tool_call_end|>"},
		blocks:  []block{between("<|tool_call_start|>", "<|tool_call_end|>", inContent, pythonCalls)},
		calls: fixed(xmlCalls(xmlShape{
			open:  func(name string) string { return name + "(" },
			mid:   "=",
			psep:  ", ",
			close: ")",
			json:  true,
		}, "<|tool_call_start|>[", ", ", "]<|tool_call_end|>")),
	}, "<think>", "</think>"))
}
