package toolcall

import "github.com/troupe-llm/troupe/grammar"

// gpt-oss's harmony format (harmony.go reads its messages).
func init() {
	ends := func(e string) block { return switchTo(e, inAny, inContent) }
	register(&format{name: OpenAI, rank: 10,
		aliases:         []string{"gpt-oss", "gpt_oss", "harmony"},
		detect:          [][]string{{"<|channel|>"}},
		markers:         []string{"<|channel|>", "<|constrain|>", "<|message|>", "<|start|>", "<|end|>"},
		reasoningMarker: harmonyAnalysis,
		dropCalls:       true,
		hideContent:     true,
		blocks: []block{
			harmonyMessage("<|channel|>"), harmonyMessage("<|start|>"),
			{start: " to=", modes: inContent, atStart: true, scan: harmonyMessage(" to=").scan},
			ends("<|end|>"), ends("<|call|>"), ends("<|return|>"),
		},
		calls: fixed(&callSyntax{single: true,
			call: jsonCalls("", "", "", around("<|channel|>commentary to=functions.", " <|constrain|>json<|message|>", "")).call}),
		reasoningGrammar: func(g *gbuild, _ bool, _ string) grammar.Expr { return grammar.Opt(harmonyAnalysisMessage(g)) },
		answer:           harmonyAnswer,
	})
}

const harmonyAnalysis = "<|channel|>analysis"

// harmonyAnalysisMessage is an analysis message, up to the next's role.
func harmonyAnalysisMessage(g *gbuild) grammar.Expr {
	return grammar.Seq(grammar.Lit(harmonyAnalysis+"<|message|>"), g.textWithout("think-text", "<|"),
		grammar.Lit("<|end|><|start|>assistant"))
}

// harmonyAnswer is, as llama.cpp's gpt-oss grammar and vLLM's structured
// output after the reasoning: analysis messages, then the final channel's
// header (its content type optional), then the answer.
func harmonyAnswer(g *gbuild, answer grammar.Expr) grammar.Expr {
	L, lower := grammar.Lit, grammar.Repeat(grammar.Class("a-z"), 1, -1)
	analysis := g.b.Rule("analysis", harmonyAnalysisMessage(g))
	final := g.b.Rule("final", grammar.Seq(L("<|channel|>final"),
		grammar.Opt(grammar.Alt(grammar.Seq(grammar.Opt(L(" ")), L("<|constrain|>"), lower), grammar.Seq(L(" "), lower))),
		L("<|message|>")))
	return grammar.Seq(grammar.Star(analysis), final, answer)
}
