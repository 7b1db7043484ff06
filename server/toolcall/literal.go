package toolcall

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/troupe-llm/troupe/grammar"
)

// literal reads the non-JSON argument syntaxes some formats use and writes
// them as JSON: Python literals (LFM2's [f(a="x", b=[1, True])], Llama's
// built-in tools) and Gemma 4's {key:<|"|>text<|"|>,n:1}.
type literal struct {
	s     string
	i     int
	gemma bool // strings are <|"|>...<|"|>, object keys may be bare
}

const gemmaQuote = grammar.GemmaQuote

// maxDepth bounds nesting, so hostile output cannot exhaust the stack.
const maxDepth = 64

func (p *literal) space() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

func (p *literal) eat(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string literal at p.i.
func (p *literal) str() (string, bool) {
	rest := p.s[p.i:]
	if p.gemma {
		if !strings.HasPrefix(rest, gemmaQuote) {
			return "", false
		}
		inner, _, ok := strings.Cut(rest[len(gemmaQuote):], gemmaQuote)
		if !ok {
			return "", false
		}
		p.i += 2*len(gemmaQuote) + len(inner)
		return inner, true
	}
	if rest == "" || (rest[0] != '"' && rest[0] != '\'') {
		return "", false
	}
	end := closingQuote(rest)
	if end < 0 {
		return "", false
	}
	p.i += end + 1
	return strings.NewReplacer(`\\`, `\`, `\'`, `'`, `\"`, `"`, `\n`, "\n", `\t`, "\t").Replace(rest[1:end]), true
}

// value reads one value and returns its JSON text.
func (p *literal) value(depth int) (string, bool) {
	p.space()
	if depth > maxDepth || p.i >= len(p.s) {
		return "", false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		var o object
		for first := true; !p.eat('}'); first = false {
			if !first && !p.eat(',') {
				return "", false
			}
			p.space()
			k, ok := p.str()
			if !ok && p.gemma { // a bare key
				j := strings.IndexByte(p.s[p.i:], ':')
				if j <= 0 {
					return "", false
				}
				k, ok = strings.TrimSpace(p.s[p.i:p.i+j]), true
				p.i += j
			}
			if !ok || !p.eat(':') {
				return "", false
			}
			v, ok := p.value(depth + 1)
			if !ok {
				return "", false
			}
			o.add(k, v)
		}
		return o.String(), true
	case c == '[':
		p.i++
		var b strings.Builder
		b.WriteByte('[')
		for first := true; !p.eat(']'); first = false {
			if !first {
				if !p.eat(',') {
					return "", false
				}
				b.WriteString(", ")
			}
			v, ok := p.value(depth + 1)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		}
		b.WriteByte(']')
		return b.String(), true
	case c == '"' || c == '\'' || strings.HasPrefix(p.s[p.i:], gemmaQuote):
		s, ok := p.str()
		return quote(s), ok
	}
	j := p.i
	for j < len(p.s) && !strings.ContainsRune(",}]) \t\r\n", rune(p.s[j])) {
		j++
	}
	tok := p.s[p.i:j]
	p.i = j
	switch tok {
	case "True":
		tok = "true"
	case "False":
		tok = "false"
	case "None":
		tok = "null"
	}
	if tok == "" || !json.Valid([]byte(tok)) {
		return "", false
	}
	return tok, true
}

// kwargs reads k=v, ... up to the closing parenthesis (Python calls).
func (p *literal) kwargs() (string, bool) {
	var o object
	for first := true; !p.eat(')'); first = false {
		if !first && !p.eat(',') {
			return "", false
		}
		p.space()
		j := strings.IndexByte(p.s[p.i:], '=')
		if j < 0 {
			return "", false
		}
		k := strings.TrimSpace(p.s[p.i : p.i+j])
		if !isName(k) {
			return "", false
		}
		p.i += j + 1
		v, ok := p.value(0)
		if !ok {
			return "", false
		}
		o.add(k, v)
	}
	return o.String(), true
}

// pythonCalls reads [f(a=1), g()] (or one call without the brackets).
func pythonCalls(s string) ([]Call, bool) {
	p := &literal{s: strings.TrimSpace(s)}
	list := p.eat('[')
	var calls []Call
	for {
		p.space()
		j := strings.IndexByte(p.s[p.i:], '(')
		if j < 0 {
			return nil, false
		}
		name := strings.TrimSpace(p.s[p.i : p.i+j])
		if !isName(name) {
			return nil, false
		}
		p.i += j + 1
		args, ok := p.kwargs()
		if !ok {
			return nil, false
		}
		calls = append(calls, Call{Name: name, Arguments: args})
		if !list || p.eat(']') {
			break
		}
		if !p.eat(',') {
			return nil, false
		}
	}
	p.space()
	return calls, p.i == len(p.s)
}

// gemmaCall reads call:NAME{key:value,...}.
func gemmaCall(inside string) ([]Call, bool) {
	s, ok := strings.CutPrefix(strings.TrimSpace(inside), "call:")
	if !ok {
		return nil, false
	}
	j := strings.IndexByte(s, '{')
	if j < 0 || !isName(s[:j]) {
		return nil, false
	}
	p := &literal{s: s, i: j, gemma: true}
	args, ok := p.value(0)
	if !ok || p.i != len(s) {
		return nil, false
	}
	return []Call{{Name: s[:j], Arguments: args}}, true
}

// closingQuote finds the quote that closes the string v begins with.
func closingQuote(v string) int {
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case v[0]:
			return i
		}
	}
	return -1
}
