package toolcall

import (
	"strings"
)

func init() {
	register(withThink(&format{name: DeepSeekR1, rank: 120,
		aliases: []string{"deepseek"},
		detect:  [][]string{{"<｜tool▁call▁begin｜>"}},
		markers: deepseekMarkers,
		blocks:  []block{deepseekSection},
		calls: fixed(jsonCalls("<｜tool▁calls▁begin｜>", "\n", "<｜tool▁calls▁end｜>",
			around("<｜tool▁call▁begin｜>function<｜tool▁sep｜>", "\n```json\n", "\n```<｜tool▁call▁end｜>"))),
	}, "<think>", "</think>"))
}

// deepseekMarkers are DeepSeek's R1 and V3.1's.
var deepseekMarkers = []string{"<think>", "</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>",
	"<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"}

// deepseekSection is the section of calls of R1 and V3.1.
var deepseekSection = section("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", deepseekCall)

// deepseekCall reads NAME<｜tool▁sep｜>{...} (V3.1) or
// function<｜tool▁sep｜>NAME\n```json\n{...}\n``` (R1).
func deepseekCall(body string) (Call, bool) {
	head, rest, ok := strings.Cut(body, "<｜tool▁sep｜>")
	if !ok {
		return Call{}, false
	}
	name := strings.TrimSpace(head)
	if name == "function" {
		if n, r, ok := strings.Cut(rest, "\n"); ok && !strings.HasPrefix(strings.TrimSpace(rest), "{") {
			name, rest = strings.TrimSpace(n), r
		}
	}
	args := strings.TrimSpace(rest)
	if strings.HasPrefix(args, "```") {
		args = strings.TrimPrefix(strings.TrimPrefix(args, "```json"), "```")
		args = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(args), "```"))
	}
	if !isName(name) || !isObject(args) {
		return Call{}, false
	}
	return Call{Name: name, Arguments: args}, true
}
