package toolcall

import (
	"strings"

	"github.com/troupe-llm/troupe/grammar"
)

func init() {
	register(withThink(&format{name: CommandR7B, rank: 40,
		aliases: []string{"command_r", "command-r7b"},
		detect:  [][]string{{"<|START_ACTION|>"}},
		markers: []string{"<|START_THINKING|>", "<|END_THINKING|>", "<|START_ACTION|>", "<|END_ACTION|>",
			"<|START_RESPONSE|>", "<|END_RESPONSE|>"},
		blocks: []block{
			switchTo("<|START_RESPONSE|>", inContent, inContent),
			switchTo("<|END_RESPONSE|>", inContent, inContent),
			between("<|START_ACTION|>", "<|END_ACTION|>", inContent, func(s string) ([]Call, bool) {
				return callArray(strings.TrimSpace(s))
			}),
		},
		calls: fixed(jsonCalls("<|START_ACTION|>[\n    ", ",\n    ", "\n]<|END_ACTION|>", func(name string, args grammar.Expr) grammar.Expr {
			return grammar.Seq(grammar.Lit(`{"tool_call_id": "`), grammar.Repeat(grammar.Class("0-9"), 1, 3),
				grammar.Lit(`", "tool_name": `+quote(name)+`, "parameters": `), args, grammar.Lit("}"))
		})),
	}, "<|START_THINKING|>", "<|END_THINKING|>"))
}
