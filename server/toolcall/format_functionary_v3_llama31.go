package toolcall

import (
	"strings"
	"unicode"
)

// Functionary v3.1 (on Llama 3.1) writes <function=NAME>{...}</function>,
// and llama's <|python_tag|>.
func init() {
	register(&format{name: Functionary31, rank: 140,
		aliases: []string{"functionary_v3_1", "functionary_v3_llama"},
		detect:  [][]string{{"<|start_header_id|>", "<function="}},
		markers: []string{"<|python_tag|>", "<function="},
		blocks: []block{
			{start: "<function=", modes: inContent, scan: functionTag},
			pythonTag(),
		},
		calls: fixed(jsonCalls("", "", "", around("<function=", ">", "</function>"))),
	})
}

// functionTag reads <function=NAME>{...}</function> (functionary v3.1).
func functionTag(s string, final bool) (int, status, outcome) {
	const start, end = "<function=", "</function>"
	gt := strings.IndexByte(s, '>')
	if gt < 0 {
		if final {
			return len(s), failed, outcome{}
		}
		return 0, needMore, outcome{}
	}
	name := s[len(start):gt]
	if !isName(name) {
		return gt + 1, failed, outcome{}
	}
	n, args, st := jsonArgs(s, gt+1, final)
	if st != done {
		return n, st, outcome{}
	}
	// The closing tag is optional, after space; wait until it is there or cannot be.
	rest := strings.TrimLeftFunc(s[n:], unicode.IsSpace)
	if strings.HasPrefix(rest, end) {
		n = len(s) - len(rest) + len(end)
	} else if strings.HasPrefix(end, rest) && !final {
		return 0, needMore, outcome{}
	}
	return n, done, outcome{calls: []Call{{Name: name, Arguments: args}}}
}
