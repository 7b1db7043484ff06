package toolcall

import (
	"strings"
)

func init() {
	register(withThink(&format{name: GLM45, rank: 100,
		aliases: []string{"glm4_moe", "glm46", "glm"},
		detect:  [][]string{{"<tool_call>", "<arg_key>"}},
		markers: []string{"<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"},
		blocks:  []block{between("<tool_call>", "</tool_call>", inContent, glmCall)},
		calls: fixed(xmlCalls(xmlShape{
			open:   func(name string) string { return "<tool_call>" + name + "\n" },
			before: "<arg_key>", mid: "</arg_key>\n<arg_value>", after: "</arg_value>\n",
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
	return textParams(name, body, func(body string) (param, string, bool) {
		k, rest, ok := cutTag(body, "<arg_key>", "</arg_key>")
		if !ok {
			return param{}, "", false
		}
		v, after, ok := cutTag(rest, "<arg_value>", "</arg_value>")
		return param{strings.TrimSpace(k), v}, after, ok
	})
}
