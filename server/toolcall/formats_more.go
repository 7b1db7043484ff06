package toolcall

import (
	"encoding/json"
	"strings"
	"unicode"
)

// registerLlama: Llama 3.x emits a bare JSON call (several joined by ";")
// or, for built-in tools and code, <|python_tag|> and the rest of the turn.
func registerLlama() {
	register(Llama3JSON, &format{blocks: []block{
		{start: "{", modes: inContent, atStart: true, scan: func(s string, final bool) (int, status, outcome) {
			n, st := jsonValue(s, final)
			if st != done {
				return max(n, 1), st, outcome{}
			}
			c, ok := llamaCall(s[:n])
			if !ok {
				return n, failed, outcome{}
			}
			return n, done, outcome{calls: []Call{c}}
		}},
		{start: ";", modes: inContent, atStart: true, afterCall: true, scan: func(string, bool) (int, status, outcome) {
			return 1, done, outcome{}
		}},
		pythonTag(),
	}})
	register(Functionary31, &format{blocks: []block{
		{start: "<function=", modes: inContent, scan: functionTag},
		pythonTag(),
	}})
}

// llamaCall reads {"name": ..., "parameters": {...}}; the arguments key is required.
func llamaCall(raw string) (Call, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &m) != nil || (m["parameters"] == nil && m["arguments"] == nil) {
		return Call{}, false
	}
	return callObject(raw)
}

// pythonTag is <|python_tag|> and the rest of the output: a JSON call,
// a built-in tool's NAME.call(k="v", ...), or code for the python tool.
func pythonTag() block {
	const start = "<|python_tag|>"
	return block{start: start, modes: inContent, scan: func(s string, final bool) (int, status, outcome) {
		if !final {
			return 0, needMore, outcome{}
		}
		body := strings.TrimSpace(s[len(start):])
		if body == "" {
			return len(s), failed, outcome{}
		}
		if strings.HasPrefix(body, "{") {
			if c, ok := callObject(body); ok && isObject(body) {
				return len(s), done, outcome{calls: []Call{c}}
			}
			return len(s), failed, outcome{}
		}
		if name, args, ok := builtinCall(body); ok {
			return len(s), done, outcome{calls: []Call{{Name: name, Arguments: args}}}
		}
		return len(s), done, outcome{calls: []Call{{Name: "python", Arguments: `{"code": ` + quote(body) + `}`}}}
	}}
}

// builtinCall reads NAME.call(k="v", n=1).
func builtinCall(s string) (name, args string, ok bool) {
	name, rest, ok := strings.Cut(s, ".call(")
	if !ok || !isName(name) {
		return "", "", false
	}
	p := &literal{s: rest}
	args, ok = p.kwargs()
	p.space()
	if !ok || p.i != len(rest) {
		return "", "", false
	}
	return name, args, true
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
	n, st := jsonValue(s[gt+1:], final)
	n += gt + 1
	if st != done {
		return n, st, outcome{}
	}
	args := strings.TrimSpace(s[gt+1 : n])
	if !strings.HasPrefix(args, "{") {
		return n, failed, outcome{}
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

// registerMistral: [TOOL_CALLS] then a JSON array (Nemo), or NAME
// ([CALL_ID]ID)? [ARGS]{...}, repeated (Small 3.2, Devstral, Ministral 3).
func registerMistral() {
	const start = "[TOOL_CALLS]"
	register(Mistral, &format{newID: mistralID, reasoning: true, thinkStart: "[THINK]", blocks: append(think("[THINK]", "[/THINK]"),
		block{start: start, modes: inContent, scan: func(s string, final bool) (int, status, outcome) {
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
		}})})
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
	off := len(s) - len(rest)
	n, st := jsonValue(rest, final)
	if st != done {
		return Call{}, off + n, st
	}
	c.Arguments = strings.TrimSpace(rest[:n])
	if !strings.HasPrefix(c.Arguments, "{") {
		return Call{}, off + n, failed
	}
	return c, off + n, done
}

// mistralID makes an id as Mistral's templates require: 9 letters and digits.
func mistralID() string { return NewCallID()[5:14] }
