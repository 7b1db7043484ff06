package toolcall

import (
	"strings"

	"github.com/troupe-llm/troupe/grammar"
)

func init() {
	register(withThink(&format{name: Hermes, rank: 170,
		aliases: []string{"qwen", "qwen3", "qwen2_5", "granite4"},
		detect:  [][]string{{"<tool_call>"}},
		markers: []string{"<think>", "</think>", "<tool_call>", "</tool_call>"},
		blocks:  []block{hermesBlock},
		calls:   fixed(hermesCalls),
	}, "<think>", "</think>"))
}

// hermesBlock is <tool_call>{...}</tool_call>.
var hermesBlock = between("<tool_call>", "</tool_call>", inContent, hermesCall)

// hermesCalls writes <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>, a line apart.
var hermesCalls = jsonCalls("", "\n", "", func(name string, args grammar.Expr) grammar.Expr {
	return grammar.Seq(grammar.Lit("<tool_call>\n"), jsonCall("name", "arguments")(name, args), grammar.Lit("\n</tool_call>"))
})

// hermesCall reads a <tool_call> body: one JSON call object.
func hermesCall(inside string) ([]Call, bool) {
	t := strings.TrimSpace(inside)
	if n, st := jsonEnd(t); st != done || n != len(t) {
		return nil, false
	}
	return one(callObject(t))
}
