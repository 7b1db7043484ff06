package toolcall

import (
	"strconv"

	"github.com/troupe-llm/troupe/grammar"
)

func init() {
	register(withThink(&format{name: Gemma4, rank: 50,
		aliases: []string{"gemma"},
		detect:  [][]string{{"'<|tool_call>call:'"}},
		markers: []string{"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", `<|"|>`},
		blocks:  []block{between("<|tool_call>", "<tool_call|>", inContent, gemmaCall)},
		calls:   fixed(gemmaCalls),
	}, "<|channel>thought", "<channel|>"))
}

// gemmaCalls is Gemma 4's syntax: one call after another, no separator,
// the arguments in Gemma's own value syntax (grammar.GemmaArgs).
var gemmaCalls = &callSyntax{call: func(g *gbuild, t Tool, i int) (grammar.Expr, error) {
	args, err := g.b.GemmaArgs("t"+strconv.Itoa(i), t.Parameters)
	if err != nil {
		return grammar.Expr{}, err
	}
	return grammar.Seq(grammar.Lit("<|tool_call>call:"+t.Name), args, grammar.Lit("<tool_call|>")), nil
}}
