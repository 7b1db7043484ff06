package toolcall

import (
	"strings"
	"unicode"

	"github.com/troupe-llm/troupe/model/grammar"
)

func init() {
	register(withThink(&format{name: GLM45, rank: 100,
		aliases: []string{"glm4_moe", "glm46", "glm"},
		detect:  [][]string{{"<tool_call>", "<arg_key>"}},
		markers: []string{"<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"},
		blocks:  []block{between("<tool_call>", "</tool_call>", inContent, glmCall)},
		calls: fixed(xmlCalls(xmlShape{
			open: func(name string) string { return "<tool_call>" + name + "\n" },
			param: func(key string, value grammar.Expr) grammar.Expr {
				return grammar.Seq(grammar.Lit("<arg_key>"+key+"</arg_key>\n<arg_value>"), value, grammar.Lit("</arg_value>\n"))
			},
			close: "</tool_call>",
		}, "", "\n", "")),
	}, "<think>", "</think>"))
}

// glmCall reads NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>...
func glmCall(inside string) ([]Call, bool) {
	s := strings.TrimSpace(inside)
	name, body := s, ""
	if i := strings.Index(s, "<arg_key>"); i >= 0 {
		name, body = s[:i], s[i:]
	}
	name = strings.TrimSpace(name)
	if !isName(name) {
		return nil, false
	}
	var params []param
	for {
		body = strings.TrimLeftFunc(body, unicode.IsSpace)
		if body == "" {
			break
		}
		k, rest, ok := cutTag(body, "<arg_key>", "</arg_key>")
		if !ok {
			return nil, false
		}
		v, after, ok := cutTag(rest, "<arg_value>", "</arg_value>")
		if !ok {
			return nil, false
		}
		params = append(params, param{strings.TrimSpace(k), v})
		body = after
	}
	return []Call{{Name: name, params: params, textParams: true}}, true
}
