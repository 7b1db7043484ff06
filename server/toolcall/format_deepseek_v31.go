package toolcall

// DeepSeek V3.1 reads as R1 (deepseekCall takes both), writes NAME<｜tool▁sep｜>{...}.
func init() {
	register(withThink(&format{name: DeepSeekV31, rank: 110,
		aliases: []string{"deepseek_v3"},
		detect:  [][]string{{"<｜tool▁call▁begin｜>", "['name'] + '<｜tool▁sep｜>'"}},
		markers: deepseekMarkers,
		blocks:  []block{deepseekSection},
		calls: fixed(jsonCalls("<｜tool▁calls▁begin｜>", "", "<｜tool▁calls▁end｜>",
			around("<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"))),
	}, "<think>", "</think>"))
}
