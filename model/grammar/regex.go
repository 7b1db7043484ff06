package grammar

import (
	"fmt"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
)

// FromRegex compiles a grammar matching exactly the strings of a regular
// expression in Go's RE2 syntax (the whole output must match: ^ and $ are
// implied). Anchors and word boundaries inside the pattern are refused.
func FromRegex(pattern string) (*Grammar, error) {
	expr, err := regexGBNF(pattern, false, true)
	if err != nil {
		return nil, err
	}
	return Compile("root ::= " + expr + "\n")
}

// regexGBNF converts a pattern to a GBNF expression. jsonString: the text
// is the inside of a JSON string (characters that JSON escapes come out
// escaped). whole: the pattern matches the whole text; else it is searched
// for (JSON Schema's "pattern"), unless anchored with ^ and $.
func regexGBNF(pattern string, jsonString, whole bool) (string, error) {
	if len(pattern) > 64<<10 {
		return "", fmt.Errorf("regex: pattern of %d bytes: %w", len(pattern), ErrTooComplex)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("regex: %w", err)
	}
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	anyChar := ".*"
	if jsonString {
		anyChar = "json-char*"
	}
	var parts []string
	if !whole {
		parts = append(parts, anyChar)
	}
	if n := len(subs); n > 0 && (subs[0].Op == syntax.OpBeginText || subs[0].Op == syntax.OpBeginLine) {
		subs, parts = subs[1:], nil
	}
	tail := anyChar
	if whole {
		tail = ""
	}
	if n := len(subs); n > 0 && (subs[n-1].Op == syntax.OpEndText || subs[n-1].Op == syntax.OpEndLine) {
		subs, tail = subs[:n-1], ""
	}
	c := &regexConv{json: jsonString}
	for _, s := range subs {
		e, err := c.conv(s, 0)
		if err != nil {
			return "", err
		}
		parts = append(parts, e)
	}
	if tail != "" {
		parts = append(parts, tail)
	}
	if len(parts) == 0 {
		return `""`, nil
	}
	return "(" + strings.Join(parts, " ") + ")", nil
}

type regexConv struct{ json bool }

func (c *regexConv) conv(re *syntax.Regexp, depth int) (string, error) {
	if depth > maxNesting {
		return "", fmt.Errorf("regex: nested deeper than %d: %w", maxNesting, ErrTooComplex)
	}
	sub := func(i int) (string, error) { return c.conv(re.Sub[i], depth+1) }
	switch re.Op {
	case syntax.OpNoMatch:
		return `[^\x00-\U0010FFFF]`, nil
	case syntax.OpEmptyMatch:
		return `""`, nil
	case syntax.OpLiteral:
		var parts []string
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && unicode.SimpleFold(r) != r {
				rs := []rune{r, r}
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					rs = append(rs, f, f)
				}
				parts = append(parts, c.class(rs))
				continue
			}
			parts = append(parts, c.class([]rune{r, r}))
		}
		return "(" + strings.Join(parts, " ") + ")", nil
	case syntax.OpCharClass:
		return c.class(re.Rune), nil
	case syntax.OpAnyCharNotNL:
		return c.class([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}), nil
	case syntax.OpAnyChar:
		return c.class([]rune{0, unicode.MaxRune}), nil
	case syntax.OpCapture:
		return sub(0)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		s, err := sub(0)
		return "(" + s + ")" + map[syntax.Op]string{syntax.OpStar: "*", syntax.OpPlus: "+", syntax.OpQuest: "?"}[re.Op], err
	case syntax.OpRepeat:
		s, err := sub(0)
		if re.Max < 0 {
			return fmt.Sprintf("(%s){%d,}", s, re.Min), err
		}
		return fmt.Sprintf("(%s){%d,%d}", s, re.Min, re.Max), err
	case syntax.OpConcat, syntax.OpAlternate:
		sep := " "
		if re.Op == syntax.OpAlternate {
			sep = " | "
		}
		parts := make([]string, len(re.Sub))
		for i := range re.Sub {
			var err error
			if parts[i], err = sub(i); err != nil {
				return "", err
			}
		}
		return "(" + strings.Join(parts, sep) + ")", nil
	}
	return "", fmt.Errorf("regex: %s is not supported inside a pattern", opName(re))
}

func opName(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpBeginText:
		return "a ^ or \\A anchor"
	case syntax.OpEndLine, syntax.OpEndText:
		return "a $ or \\z anchor"
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return "a word boundary"
	}
	return fmt.Sprintf("operator %d", re.Op)
}

// class writes a character class of rune pairs [lo, hi, ...]. In a JSON
// string, the quote, backslash and control characters come out as escapes.
func (c *regexConv) class(pairs []rune) string {
	var b strings.Builder
	var escapes []string
	b.WriteByte('[')
	empty := true
	for i := 0; i+1 < len(pairs); i += 2 {
		lo, hi := pairs[i], pairs[i+1]
		if c.json {
			for r := lo; r <= min(hi, 0x1F); r++ {
				escapes = append(escapes, jsonEscape(r))
			}
			lo = max(lo, 0x20)
			for _, r := range []rune{'"', '\\'} {
				if lo <= r && r <= hi {
					escapes = append(escapes, jsonEscape(r))
					if lo < r {
						writeClassRange(&b, lo, r-1)
						empty = false
					}
					lo = r + 1
				}
			}
		}
		if lo <= hi {
			writeClassRange(&b, lo, hi)
			empty = false
		}
	}
	b.WriteByte(']')
	alts := escapes
	if !empty {
		alts = append([]string{b.String()}, escapes...)
	}
	switch len(alts) {
	case 0:
		return `[^\x00-\U0010FFFF]`
	case 1:
		return alts[0]
	}
	return "(" + strings.Join(alts, " | ") + ")"
}

func writeClassRange(b *strings.Builder, lo, hi rune) {
	b.WriteString(classChar(lo))
	if hi != lo {
		b.WriteByte('-')
		b.WriteString(classChar(hi))
	}
}

// classChar writes a code point for a GBNF class, escaped where llama.cpp's
// parser needs it.
func classChar(r rune) string {
	switch {
	case r < 0x20 || r == 0x7F || r == '\\' || r == ']' || r == '[' || r == '-' || r == '^' || r == '"':
		return fmt.Sprintf(`\x%02X`, r)
	case r >= 0xD800 && r <= 0xDFFF || r > unicode.MaxRune:
		return fmt.Sprintf(`\U%08X`, r)
	}
	return string(r)
}

// jsonEscape is the GBNF literal of the JSON escape of r.
func jsonEscape(r rune) string {
	switch r {
	case '"':
		return `"\\\""`
	case '\\':
		return `"\\\\"`
	case '\n':
		return `"\\n"`
	case '\r':
		return `"\\r"`
	case '\t':
		return `"\\t"`
	}
	return `"\\u00` + fmt.Sprintf("%02x", r) + `"`
}

// literal is s as a GBNF string literal.
func literal(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7F:
			b.WriteString(`\x` + strconv.FormatInt(int64(r)|0x100, 16)[1:])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
