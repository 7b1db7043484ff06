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
// implied; anchors inside count as empty). Word boundaries are refused.
func FromRegex(pattern string) (*Grammar, error) {
	expr, err := regexGBNF(pattern, false, true)
	if err != nil {
		return nil, err
	}
	src, err := NewBuilder(nil).GBNF(expr)
	if err != nil {
		return nil, err
	}
	return Compile(src)
}

// regexGBNF converts a pattern to an expression. jsonString: the text
// is the inside of a JSON string (characters that JSON escapes come out
// escaped). whole: the pattern matches the whole text; else it is searched
// for (JSON Schema's "pattern"), unless anchored with ^ and $.
func regexGBNF(pattern string, jsonString, whole bool) (Expr, error) {
	if len(pattern) > 64<<10 {
		return Expr{}, fmt.Errorf("regex: pattern of %d bytes: %w", len(pattern), ErrTooComplex)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return Expr{}, fmt.Errorf("regex: %w", err)
	}
	anyText := Star(anyChar)
	if jsonString {
		anyText = Star(ruleRef("json-char"))
	}
	c := &regexConv{json: jsonString}
	// Each top-level alternative is searched for unless anchored; anchors
	// elsewhere count as empty (a pattern like a^b is matched loosely).
	branches := []*syntax.Regexp{re}
	if re.Op == syntax.OpAlternate && !whole {
		branches = re.Sub
	}
	var out []Expr
	for _, br := range branches {
		e, err := c.conv(br, 0)
		if err != nil {
			return Expr{}, err
		}
		if !whole && !anchored(br, true) {
			e = Seq(anyText, e)
		}
		if !whole && !anchored(br, false) {
			e = Seq(e, anyText)
		}
		out = append(out, e)
	}
	return paren(alts(out...)), nil
}

// anchored reports whether every match of re starts (start) or ends (!start)
// at an anchor.
func anchored(re *syntax.Regexp, start bool) bool {
	switch re.Op {
	case syntax.OpBeginText, syntax.OpBeginLine:
		return start
	case syntax.OpEndText, syntax.OpEndLine:
		return !start
	case syntax.OpCapture:
		return anchored(re.Sub[0], start)
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return false
		}
		if start {
			return anchored(re.Sub[0], start)
		}
		return anchored(re.Sub[len(re.Sub)-1], start)
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !anchored(s, start) {
				return false
			}
		}
		return true
	}
	return false
}

type regexConv struct{ json bool }

func (c *regexConv) conv(re *syntax.Regexp, depth int) (Expr, error) {
	if depth > maxNesting {
		return Expr{}, fmt.Errorf("regex: nested deeper than %d: %w", maxNesting, ErrTooComplex)
	}
	sub := func(i int) (Expr, error) { return c.conv(re.Sub[i], depth+1) }
	switch re.Op {
	case syntax.OpNoMatch:
		return nothing, nil
	case syntax.OpEmptyMatch, syntax.OpBeginText, syntax.OpBeginLine, syntax.OpEndText, syntax.OpEndLine:
		return emptyLit, nil
	case syntax.OpLiteral:
		var parts []Expr
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
		return paren(Seq(parts...)), nil
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
		return map[syntax.Op]func(Expr) Expr{syntax.OpStar: Star, syntax.OpPlus: plus, syntax.OpQuest: Opt}[re.Op](paren(s)), err
	case syntax.OpRepeat:
		s, err := sub(0)
		return Repeat(paren(s), re.Min, re.Max), err
	case syntax.OpConcat, syntax.OpAlternate:
		parts := make([]Expr, len(re.Sub))
		for i := range re.Sub {
			var err error
			if parts[i], err = sub(i); err != nil {
				return Expr{}, err
			}
		}
		if re.Op == syntax.OpAlternate {
			return paren(alts(parts...)), nil
		}
		return paren(Seq(parts...)), nil
	}
	return Expr{}, fmt.Errorf("regex: %s is not supported inside a pattern", opName(re))
}

func opName(re *syntax.Regexp) string {
	if re.Op == syntax.OpWordBoundary || re.Op == syntax.OpNoWordBoundary {
		return "a word boundary"
	}
	return fmt.Sprintf("operator %d", re.Op)
}

// class is a character class of rune pairs [lo, hi, ...]. In a JSON
// string, the quote, backslash and control characters come out as escapes.
func (c *regexConv) class(pairs []rune) Expr {
	var b strings.Builder
	var escapes []Expr
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
	out := escapes
	if !empty {
		out = append([]Expr{Class(b.String())}, escapes...)
	}
	switch len(out) {
	case 0:
		return nothing
	case 1:
		return out[0]
	}
	return paren(alts(out...))
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

// jsonEscape is the literal of the JSON escape of r.
func jsonEscape(r rune) Expr {
	switch r {
	case '"', '\\':
		return Lit(`\` + string(r))
	case '\n':
		return Lit(`\n`)
	case '\r':
		return Lit(`\r`)
	case '\t':
		return Lit(`\t`)
	}
	return Lit(`\u00` + fmt.Sprintf("%02x", r))
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
