package toolcall

import (
	"strings"
	"unicode"
)

// Mistral writes [TOOL_CALLS] then a JSON array (Nemo), or NAME
// ([CALL_ID]ID)? [ARGS]{...}, repeated (Small 3.2, Devstral, Ministral 3).
func init() {
	register(withThink(&format{name: Mistral, rank: 80,
		aliases: []string{"mistral_nemo", "magistral"},
		detect:  [][]string{{"[TOOL_CALLS]"}},
		markers: []string{"[THINK]", "[/THINK]", "[TOOL_CALLS]", "[CALL_ID]", "[ARGS]"},
		newID:   mistralID,
		blocks:  []block{{start: mistralStart, modes: inContent, scan: mistralBlock}},
		calls: func(template string) *callSyntax {
			if !strings.Contains(template, "[ARGS]") {
				return mistralNemo
			}
			return mistralCalls
		},
	}, "[THINK]", "[/THINK]"))
}

var (
	mistralNemo  = jsonCalls("[TOOL_CALLS][", ", ", "]", jsonCall("name", "arguments"))
	mistralCalls = jsonCalls("", "", "", around("[TOOL_CALLS]", "[ARGS]", ""))
)

const mistralStart = "[TOOL_CALLS]"

// mistralBlock reads [TOOL_CALLS] and the calls after it.
func mistralBlock(s string, final bool) (int, status, outcome) {
	const start = mistralStart
	rest := strings.TrimLeftFunc(s[len(start):], unicode.IsSpace)
	if rest == "" {
		if final {
			return len(s), failed, outcome{}
		}
		return 0, needMore, outcome{}
	}
	if rest[0] == '[' {
		return jsonArray(start, inContent).scan(s, final)
	}
	var calls []Call
	pos, end := len(start), 0 // end: where the calls read so far end
	for {
		c, n, st := mistralCall(s[pos:], final)
		if st == needMore {
			return 0, needMore, outcome{}
		}
		if st == failed {
			if len(calls) > 0 { // what follows the calls is read again, as text or another block
				return end, done, outcome{calls: calls}
			}
			return pos + n, failed, outcome{}
		}
		calls = append(calls, c)
		pos += n
		end = pos
		if rest := s[pos:]; len(rest) < len(start) && strings.HasPrefix(start, rest) && rest != "" && !final {
			return 0, needMore, outcome{}
		}
		if strings.HasPrefix(s[pos:], start) {
			pos += len(start)
		}
	}
}

// mistralCall reads one NAME([CALL_ID]ID)?[ARGS]{...} at the start of s.
func mistralCall(s string, final bool) (Call, int, status) {
	i := strings.IndexByte(s, '[')
	if i < 0 {
		if final || !isNamePrefix(s) {
			return Call{}, len(s), failed
		}
		return Call{}, 0, needMore
	}
	var c Call
	c.Name = s[:i]
	if !isName(c.Name) {
		return Call{}, i, failed
	}
	rest := s[i:]
	for _, tag := range []string{"[CALL_ID]", "[ARGS]"} {
		if len(rest) < len(tag) && strings.HasPrefix(tag, rest) && !final {
			return Call{}, 0, needMore
		}
		if !strings.HasPrefix(rest, tag) {
			if tag == "[CALL_ID]" {
				continue
			}
			return Call{}, len(s) - len(rest), failed
		}
		rest = rest[len(tag):]
		if tag == "[CALL_ID]" {
			j := strings.IndexByte(rest, '[')
			if j < 0 {
				if final {
					return Call{}, len(s), failed
				}
				return Call{}, 0, needMore
			}
			c.ID, rest = rest[:j], rest[j:]
		}
	}
	n, args, st := jsonArgs(s, len(s)-len(rest), final)
	if st != done {
		return Call{}, n, st
	}
	c.Arguments = args
	return c, n, done
}

// mistralID makes an id as Mistral's templates require: 9 letters and digits.
func mistralID() string { return NewCallID()[5:14] }
