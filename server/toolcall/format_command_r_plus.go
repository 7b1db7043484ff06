package toolcall

import (
	"strings"
	"unicode"
)

func init() {
	register(&format{name: CommandRPlus, rank: 70,
		detect:  [][]string{{`Action:\n` + "```json"}},
		markers: []string{"Action:"},
		blocks:  []block{{start: "Action:", modes: inContent, scan: actionBlock}},
		calls:   fixed(jsonCalls("Action: ```json\n[\n    ", ",\n    ", "\n]\n```", jsonCall("tool_name", "parameters"))),
	})
}

// actionBlock reads Command R+'s Action: ```json [...] ```.
func actionBlock(s string, final bool) (int, status, outcome) {
	const start, fence = "Action:", "```"
	i := len(s) - len(strings.TrimLeftFunc(s[len(start):], unicode.IsSpace))
	rest := s[i:]
	if !final && len(rest) < len(fence+"json") && strings.HasPrefix(fence+"json", rest) {
		return 0, needMore, outcome{}
	}
	fenced := strings.HasPrefix(rest, fence)
	if fenced {
		i += len(fence)
		if strings.HasPrefix(s[i:], "json") {
			i += len("json")
		}
	} else if !strings.HasPrefix(rest, "[") {
		return len(start), failed, outcome{}
	}
	n, st := jsonValue(s[i:], final)
	n += i
	if st != done {
		return n, st, outcome{}
	}
	calls, ok := callArray(strings.TrimSpace(s[i:n]))
	if !ok {
		return n, failed, outcome{}
	}
	if fenced {
		j := len(s) - len(strings.TrimLeftFunc(s[n:], unicode.IsSpace))
		switch after := s[j:]; {
		case strings.HasPrefix(after, fence):
			n = j + len(fence)
		case !final && len(after) < len(fence) && strings.HasPrefix(fence, after):
			return 0, needMore, outcome{}
		}
	}
	return n, done, outcome{calls: calls}
}
