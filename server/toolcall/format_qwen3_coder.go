package toolcall

import (
	"strings"
)

func init() {
	register(withThink(&format{name: Qwen3Coder, rank: 90,
		aliases: []string{"qwen3_xml"},
		detect:  [][]string{{"<tool_call>", "<function=", "<parameter="}},
		markers: []string{"<think>", "</think>", "<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>"},
		blocks:  []block{between("<tool_call>", "</tool_call>", inContent, qwen3CoderCall)},
		calls: fixed(xmlCalls(xmlShape{
			open:   func(name string) string { return "<tool_call>\n<function=" + name + ">\n" },
			before: "<parameter=", mid: ">\n", after: "\n</parameter>\n",
			close: "</function>\n</tool_call>",
		}, "", "\n", "")),
	}, "<think>", "</think>"))
}

// qwen3CoderCall reads <function=NAME><parameter=K>\nV\n</parameter>...</function>.
func qwen3CoderCall(inside string) ([]Call, bool) {
	s := strings.TrimSpace(inside)
	if !strings.HasPrefix(s, "<function=") || !strings.HasSuffix(s, "</function>") {
		return nil, false
	}
	name, body, ok := strings.Cut(s[len("<function="):len(s)-len("</function>")], ">")
	if !ok || !isName(name) {
		return nil, false
	}
	return textParams(name, body, func(body string) (param, string, bool) {
		head, rest, ok := cutTag(body, "<parameter=", ">")
		if !ok || !isName(head) {
			return param{}, "", false
		}
		v, after, ok := strings.Cut(rest, "</parameter>")
		return param{head, trimNewline(v)}, after, ok
	})
}
