package toolcall

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
)

// jsonEnd finds the end of the JSON object or array that s begins with
// (after space). It returns needMore if s ends inside it, failed (with the
// length read) on a bracket that does not match or a value that is not JSON.
func jsonEnd(s string) (int, status) {
	i := len(s) - len(strings.TrimLeftFunc(s, unicode.IsSpace))
	if i == len(s) {
		return i, needMore
	}
	if s[i] != '{' && s[i] != '[' {
		return i + 1, failed
	}
	var stack []byte
	inStr, esc := false, false
	for j := i; j < len(s); j++ {
		c := s[j]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			open := byte('{')
			if c == ']' {
				open = '['
			}
			if stack[len(stack)-1] != open {
				return j + 1, failed
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				if !json.Valid([]byte(s[i : j+1])) {
					return j + 1, failed
				}
				return j + 1, done
			}
		}
	}
	return len(s), needMore
}

// jsonValue ends s's JSON value for a block that has no end marker: at
// final, an unfinished value fails.
func jsonValue(s string, final bool) (int, status) {
	n, st := jsonEnd(s)
	if st == needMore && final {
		return len(s), failed
	}
	return n, st
}

// callObject reads {"name": ..., "arguments"|"parameters": {...}} (and
// "tool_name", "id"/"tool_call_id"); ok is false for anything else.
func callObject(raw string) (Call, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &m) != nil {
		return Call{}, false
	}
	var c Call
	name := m["name"]
	if name == nil {
		name = m["tool_name"]
	}
	if name == nil {
		if fn := m["function"]; fn != nil && m["type"] != nil { // {"type":"function","function":{...}}
			return callObject(string(fn))
		}
		return Call{}, false
	}
	if json.Unmarshal(name, &c.Name) != nil || c.Name == "" {
		return Call{}, false
	}
	args := m["arguments"]
	if args == nil {
		args = m["parameters"]
	}
	a, ok := argsText(args)
	if !ok {
		return Call{}, false
	}
	c.Arguments = a
	for _, k := range []string{"id", "tool_call_id"} {
		if v := m[k]; v != nil {
			var id string
			if json.Unmarshal(v, &id) == nil && len(id) > 4 { // command-r's "0", "1" are indexes, not ids
				c.ID = id
			}
		}
	}
	return c, true
}

// argsText returns arguments as a JSON object's text: an object as written,
// a string holding an object unquoted, nothing as {}.
func argsText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", true
	}
	switch raw[0] {
	case '{':
		return string(raw), true
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return "{}", true
		}
		if s[0] == '{' && json.Valid([]byte(s)) {
			return s, true
		}
	}
	return "", false
}

// callArray reads a JSON array of call objects.
func callArray(raw string) ([]Call, bool) {
	var items []json.RawMessage
	if json.Unmarshal([]byte(raw), &items) != nil || len(items) == 0 {
		return nil, false
	}
	calls := make([]Call, 0, len(items))
	for _, it := range items {
		c, ok := callObject(string(it))
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
	}
	return calls, true
}

// object builds a JSON object's text from ordered keys and raw values.
type object struct{ b strings.Builder }

func (o *object) add(key, rawValue string) {
	if o.b.Len() == 0 {
		o.b.WriteByte('{')
	} else {
		o.b.WriteString(", ")
	}
	k, _ := json.Marshal(key)
	o.b.Write(k)
	o.b.WriteString(": ")
	o.b.WriteString(rawValue)
}

func (o *object) String() string {
	if o.b.Len() == 0 {
		return "{}"
	}
	return o.b.String() + "}"
}

// xmlValue turns a parameter's text (Qwen3-Coder, GLM) into JSON: a JSON
// number, boolean, null, object or array as written, anything else a string.
func xmlValue(s string) string {
	t := strings.TrimSpace(s)
	if t != "" && t[0] != '"' && json.Valid([]byte(t)) {
		return t
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// quote is s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
