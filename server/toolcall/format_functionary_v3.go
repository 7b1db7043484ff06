package toolcall

import "strings"

// Functionary v3.2 writes ">>>RECIPIENT\n" before each part ("all" for
// text, a function's name before its JSON arguments); the prompt ends with
// the first ">>>".
func init() {
	register(&format{name: FunctionaryV3, rank: 20,
		aliases: []string{"functionary", "functionary_v3_2"},
		detect:  [][]string{{">>>all"}},
		markers: []string{">>>"},
		prefix:  functionaryStart,
		blocks:  []block{{start: functionaryStart, modes: inContent, scan: functionaryBlock}},
		calls:   fixed(jsonCalls("", ">>>", "", around("", "\n", ""))),
	})
}

const functionaryStart = ">>>"

// functionaryBlock reads one part: ">>>RECIPIENT\n" and what follows.
func functionaryBlock(s string, final bool) (int, status, outcome) {
	const start = functionaryStart
	nl := strings.IndexByte(s, '\n')
	head := s[len(start):]
	if nl >= 0 {
		head = s[len(start):nl]
	}
	if nl >= 0 && !isName(head) || nl < 0 && !isNamePrefix(head) {
		return len(start), failed, outcome{}
	}
	if nl < 0 {
		if final {
			return len(s), failed, outcome{}
		}
		return 0, needMore, outcome{}
	}
	if head == "all" {
		return nl + 1, done, outcome{}
	}
	if head == "python" && !strings.HasPrefix(strings.TrimSpace(s[nl+1:]), "{") {
		// code, to the next part or the end
		end := strings.Index(s[nl+1:], start)
		if end < 0 {
			if !final {
				return 0, needMore, outcome{}
			}
			end = len(s) - nl - 1
		}
		code := strings.TrimSpace(s[nl+1 : nl+1+end])
		var o object
		o.add("code", quote(code))
		return nl + 1 + end, done, outcome{calls: []Call{{Name: "python", Arguments: o.String()}}}
	}
	n, args, st := jsonArgs(s, nl+1, final)
	if st != done {
		return n, st, outcome{}
	}
	return n, done, outcome{calls: []Call{{Name: head, Arguments: args}}}
}
