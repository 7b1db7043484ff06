package toolcall

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Block builders shared by the formats.

// switchTo is a marker that only changes where plain text goes.
func switchTo(start string, in, to mode) block {
	return block{start: start, modes: in, scan: func(string, bool) (int, status, outcome) {
		return len(start), done, outcome{setMode: to}
	}}
}

// between is a block from start to end whose inside parse reads. Without
// its end, at the end of the output, it holds what follows start (models
// often stop before writing the end marker).
func between(start, end string, modes mode, parse func(inside string) ([]Call, bool)) block {
	return block{start: start, modes: modes, scan: func(s string, final bool) (int, status, outcome) {
		j := strings.Index(s[len(start):], end)
		if j < 0 {
			if !final {
				return 0, needMore, outcome{}
			}
			if calls, ok := parse(s[len(start):]); ok {
				return len(s), done, outcome{calls: calls}
			}
			return len(s), failed, outcome{}
		}
		n := len(start) + j + len(end)
		calls, ok := parse(s[len(start) : len(start)+j])
		if !ok {
			return n, failed, outcome{}
		}
		return n, done, outcome{calls: calls}
	}}
}

func one(c Call, ok bool) ([]Call, bool) {
	if !ok {
		return nil, false
	}
	return []Call{c}, true
}

// isName reports whether s is a function name: letters, digits, _ - . :
func isName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-.:/", r)) {
			return false
		}
	}
	return true
}

// isNamePrefix reports whether s may begin a name: s is a name but for a
// character not yet complete at its end.
func isNamePrefix(s string) bool {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				s = s[:i]
			}
			break
		}
	}
	return s == "" || isName(s)
}

// cutTag returns the text between open and close in s and what follows.
func cutTag(s, open, close string) (inside, rest string, ok bool) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if !strings.HasPrefix(s, open) {
		return "", s, false
	}
	inside, rest, ok = strings.Cut(s[len(open):], close)
	return inside, rest, ok
}

// trimNewline drops one newline on each side, as the templates put them.
func trimNewline(s string) string {
	s = strings.TrimPrefix(s, "\n")
	return strings.TrimSuffix(s, "\n")
}

// textParams is the call of name whose parameters, as text, next reads one
// after another from body, space between them.
func textParams(name, body string, next func(string) (param, string, bool)) ([]Call, bool) {
	var params []param
	for body = strings.TrimLeftFunc(body, unicode.IsSpace); body != ""; body = strings.TrimLeftFunc(body, unicode.IsSpace) {
		p, rest, ok := next(body)
		if !ok {
			return nil, false
		}
		params, body = append(params, p), rest
	}
	return []Call{{Name: name, params: params, textParams: true}}, true
}

// jsonArgs reads the JSON object of a call's arguments at s[at:]: n is
// where it ends, args its text.
func jsonArgs(s string, at int, final bool) (n int, args string, st status) {
	n, st = jsonValue(s[at:], final)
	n += at
	if st != done {
		return n, "", st
	}
	args = strings.TrimSpace(s[at:n])
	if !strings.HasPrefix(args, "{") {
		return n, "", failed
	}
	return n, args, done
}

// jsonArray reads a JSON array of call objects that follows start.
func jsonArray(start string, modes mode) block {
	return block{start: start, modes: modes, scan: func(s string, final bool) (int, status, outcome) {
		n, st := jsonValue(s[len(start):], final)
		n += len(start)
		if st != done {
			return n, st, outcome{}
		}
		calls, ok := callArray(s[len(start):n])
		if !ok {
			return n, failed, outcome{}
		}
		return n, done, outcome{calls: calls}
	}}
}

// sectionCalls reads the calls of a section (DeepSeek, Kimi): each from
// begin to end, read by parse; only space between them.
func sectionCalls(inside, begin, end string, parse func(string) (Call, bool)) ([]Call, bool) {
	var calls []Call
	for s := strings.TrimSpace(inside); s != ""; s = strings.TrimSpace(s) {
		body, rest, ok := cutTag(s, begin, end)
		if !ok {
			return nil, false
		}
		c, ok := parse(body)
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
		s = rest
	}
	return calls, len(calls) > 0
}

// section is a block from start to end holding calls; a section without
// its end at final is read to the end of the text (models stop on it).
func section(start, end, begin, callEnd string, parse func(string) (Call, bool)) block {
	return block{start: start, modes: inContent, scan: func(s string, final bool) (int, status, outcome) {
		j := strings.Index(s[len(start):], end)
		n := len(start) + j + len(end)
		if j < 0 {
			if !final {
				return 0, needMore, outcome{}
			}
			j, n = len(s)-len(start), len(s)
		}
		calls, ok := sectionCalls(s[len(start):len(start)+j], begin, callEnd, parse)
		if !ok {
			return n, failed, outcome{}
		}
		return n, done, outcome{calls: calls}
	}}
}

// isObject reports whether s is exactly one JSON object.
func isObject(s string) bool {
	n, st := jsonEnd(s)
	return st == done && n == len(s) && strings.HasPrefix(s, "{")
}
