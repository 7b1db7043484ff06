package chat

import "strings"

// gonja parses a conditional expression (A if C else B) only as the whole of
// a {{ }} or a set's value, not nested: not in '}' + (', ' if x else '') nor
// in f(a if c else b). liftConditionals rewrites each nested one in a tag's
// body to __chat_cond(C, A, B), which rewrite.go turns into the lazy
// (C and (A,) or (B,))[0].

const condFunc = "__chat_cond"

// bodyToken is a token of a tag body: kind is the character that opens or
// closes a group ( [ { ) ] }, a separator , : =, '"' for a string literal,
// 'a' for a name, '.' for anything else.
type bodyToken struct {
	kind       byte
	start, end int
}

func lexBody(s string) []bodyToken {
	var toks []bodyToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '\'' || c == '"':
			end := stringEnd(s, i)
			toks = append(toks, bodyToken{'"', i, end})
			i = end
			continue
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, bodyToken{'a', i, j})
			i = j
			continue
		case strings.IndexByte("=<>!", c) >= 0 && i+1 < len(s) && s[i+1] == '=':
			toks = append(toks, bodyToken{'.', i, i + 2})
			i += 2
			continue
		case strings.IndexByte("()[]{},:=", c) >= 0:
			toks = append(toks, bodyToken{c, i, i + 1})
		default:
			toks = append(toks, bodyToken{'.', i, i + 1})
		}
		i++
	}
	return toks
}

// liftConditionals rewrites the conditional expressions nested in groups of
// a tag body; one spanning the whole body is gonja's to parse.
func liftConditionals(body string) string {
	if !strings.Contains(body, "if") {
		return body
	}
	l := &lifter{s: body, toks: lexBody(body)}
	var b strings.Builder
	b.WriteString(body[:l.pos(0)])
	b.WriteString(l.groups(0, len(l.toks)))
	if n := len(l.toks); n > 0 {
		b.WriteString(body[l.toks[n-1].end:])
	}
	return b.String()
}

type lifter struct {
	s    string
	toks []bodyToken
}

// pos is where token i starts, or the end of the body.
func (l *lifter) pos(i int) int {
	if i < len(l.toks) {
		return l.toks[i].start
	}
	return len(l.s)
}

// text is the source of tokens [i, j), with what lies between them.
func (l *lifter) text(i, j int) string {
	if i >= j {
		return ""
	}
	return l.s[l.toks[i].start:l.toks[j-1].end]
}

// gap is the source between tokens i-1 and i.
func (l *lifter) gap(i int) string {
	if i == 0 || i >= len(l.toks) {
		return ""
	}
	return l.s[l.toks[i-1].end:l.toks[i].start]
}

// match returns the index of the token closing the group opened at i.
func (l *lifter) match(i int) int {
	depth := 0
	for j := i; j < len(l.toks); j++ {
		switch l.toks[j].kind {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return len(l.toks)
}

// groups returns tokens [i, j) with each group's content lifted.
func (l *lifter) groups(i, j int) string {
	var b strings.Builder
	for k := i; k < j; k++ {
		if k > i {
			b.WriteString(l.gap(k))
		}
		t := l.toks[k]
		if t.kind != '(' && t.kind != '[' && t.kind != '{' {
			b.WriteString(l.s[t.start:t.end])
			continue
		}
		m := min(l.match(k), j)
		b.WriteString(l.s[t.start:t.end])
		b.WriteString(l.gap(k + 1))
		b.WriteString(l.slots(k+1, m))
		if m < j {
			b.WriteString(l.gap(m))
			b.WriteString(l.s[l.toks[m].start:l.toks[m].end])
		}
		k = m
	}
	return b.String()
}

// slots returns a group's content [i, j), each comma- or colon-separated
// slot lifted.
func (l *lifter) slots(i, j int) string {
	var b strings.Builder
	start := i
	for k := i; k <= j; k++ {
		if k < j {
			switch l.toks[k].kind {
			case '(', '[', '{':
				k = l.match(k)
				continue
			case ',', ':':
			default:
				continue
			}
		}
		b.WriteString(l.slot(start, k))
		if k < j {
			b.WriteString(l.gap(k))
			b.WriteString(l.s[l.toks[k].start:l.toks[k].end])
			b.WriteString(l.gap(k + 1))
		}
		start = k + 1
	}
	return b.String()
}

// slot returns one expression [i, j) lifted: A if C else B becomes
// __chat_cond(C, A, B), keyword arguments (name=…) keep their name.
func (l *lifter) slot(i, j int) string {
	if j-i >= 2 && l.toks[i].kind == 'a' && l.toks[i+1].kind == '=' {
		return l.text(i, i+2) + l.gap(i+2) + l.slot(i+2, j)
	}
	ifAt, elseAt := -1, -1
	for k := i; k < j; k++ {
		switch t := l.toks[k]; {
		case t.kind == '(' || t.kind == '[' || t.kind == '{':
			k = l.match(k)
		case t.kind == 'a' && l.s[t.start:t.end] == "if" && ifAt < 0:
			ifAt = k
		case t.kind == 'a' && l.s[t.start:t.end] == "else" && ifAt >= 0:
			elseAt = k
		}
		if elseAt >= 0 {
			break
		}
	}
	if ifAt <= i {
		return l.groups(i, j)
	}
	// Keep the line breaks the keywords' surroundings held.
	breaks := func(k int) string { return strings.Repeat("\n", strings.Count(l.gap(k)+l.gap(k+1), "\n")) }
	alt := undefinedName
	condEnd := j
	if elseAt > ifAt {
		alt, condEnd = breaks(elseAt)+l.slot(elseAt+1, j), elseAt
	}
	return condFunc + "(" + l.groups(ifAt+1, condEnd) + ", " + breaks(ifAt) + l.groups(i, ifAt) + ", " + alt + ")"
}
