package toolcall

import (
	"encoding/json"
	"strings"
)

// Llama 3.x emits a bare JSON call (several joined by ";") or, for
// built-in tools and code, <|python_tag|> and the rest of the turn.
func init() {
	register(&format{name: Llama3JSON, rank: 150,
		aliases: []string{"llama3", "llama4_json", "llama"},
		detect:  [][]string{{"<|start_header_id|>ipython<|end_header_id|>"}, {"<|python_tag|>"}},
		markers: []string{"<|python_tag|>"},
		calls:   fixed(&callSyntax{single: true, call: jsonCalls("", "", "", jsonCall("name", "parameters")).call}),
		blocks: []block{
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
