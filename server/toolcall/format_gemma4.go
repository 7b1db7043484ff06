package toolcall

func init() {
	register(withThink(&format{name: Gemma4, rank: 50,
		aliases: []string{"gemma"},
		detect:  [][]string{{"'<|tool_call>call:'"}},
		markers: []string{"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", `<|"|>`},
		blocks:  []block{between("<|tool_call>", "<tool_call|>", inContent, gemmaCall)},
		calls:   fixed(gemmaCalls),
	}, "<|channel>thought", "<channel|>"))
}
