package toolcall

import (
	"strings"

	"github.com/troupe-llm/troupe/grammar"
)

func init() {
	register(withThink(&format{name: KimiK2, rank: 30,
		aliases: []string{"kimi"},
		detect:  [][]string{{"<|tool_calls_section_begin|>", "<|tool_call_begin|>"}},
		markers: []string{"<think>", "</think>", "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
			"<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"},
		blocks: []block{section("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_end|>", kimiCall)},
		calls: fixed(jsonCalls("<|tool_calls_section_begin|>", "", "<|tool_calls_section_end|>", func(name string, args grammar.Expr) grammar.Expr {
			return grammar.Seq(grammar.Lit("<|tool_call_begin|>functions."+name+":"), grammar.Repeat(grammar.Class("0-9"), 1, 3),
				grammar.Lit("<|tool_call_argument_begin|>"), args, grammar.Lit("<|tool_call_end|>"))
		})),
	}, "<think>", "</think>"))
}

// kimiCall reads functions.NAME:i<|tool_call_argument_begin|>{...}; the id is the model's.
func kimiCall(body string) (Call, bool) {
	id, args, ok := strings.Cut(body, "<|tool_call_argument_begin|>")
	id, args = strings.TrimSpace(id), strings.TrimSpace(args)
	if !ok || !isObject(args) {
		return Call{}, false
	}
	name := strings.TrimPrefix(id, "functions.")
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if !isName(name) {
		return Call{}, false
	}
	return Call{ID: id, Name: name, Arguments: args}, true
}
