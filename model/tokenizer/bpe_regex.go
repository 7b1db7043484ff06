package tokenizer

import (
	"fmt"
	"strings"

	"github.com/dlclark/regexp2"
)

// Running a pre-tokenizer regex the way llama.cpp's unicode_regex_split runs
// the ones it has no hand-written splitter for. A regex with \p{..} classes
// goes to std::regex over a "collapsed" text, one byte per code point: ASCII
// as is, other whitespace as \v, other code points as one byte per category
// (0xD0 for the rest); the \p{..} classes become their ASCII members plus that
// byte. A regex without them runs over the code points, with non-ASCII
// whitespace turned into \v. llama.cpp's vectors reflect these quirks.

type regexMode int

const (
	regexCodepoints regexMode = iota // std::wregex over code points
	regexCollapsed                   // std::regex over the collapsed text
	regexUnicode                     // the real code points, for tokenizer.json patterns
)

// regexSplit cuts each segment at the matches of re; the text between two
// matches is a piece of its own.
type regexSplit struct {
	re   *regexp2.Regexp
	mode regexMode
}

func (s *regexSplit) split(t *splitText, segs, out []int) []int {
	text := make([]rune, len(t.cpts))
	for i, r := range t.cpts {
		text[i] = r
		switch f := t.flags[i]; {
		case r < 128 || s.mode == regexUnicode:
		case f&cptWhitespace != 0:
			text[i] = '\v'
		case s.mode == regexCollapsed:
			text[i] = collapsedCpt(f)
		}
	}
	start := 0
	for _, n := range segs {
		seg := text[start : start+n]
		done := 0
		m, _ := s.re.FindRunesMatch(seg)
		for m != nil {
			if m.Index > done {
				out = append(out, m.Index-done)
			}
			out = append(out, m.Length)
			done = m.Index + m.Length
			m, _ = s.re.FindNextMatch(m)
		}
		if done < n {
			out = append(out, n-done)
		}
		start += n
	}
	return out
}

func collapsedCpt(f cptFlags) rune {
	switch f & cptCategories {
	case cptNumber:
		return 0xD1
	case cptLetter:
		return 0xD2
	case cptPunct:
		return 0xD3
	case cptMark:
		return 0xD4
	case cptSymbol:
		return 0xD5
	}
	return 0xD0
}

// ucats are the \p{..} classes llama.cpp's fallback understands, with the
// byte standing for non-ASCII members in the collapsed text and the ASCII
// members (unicode.cpp: k_ucat_enum, k_ucat_cpt, k_ucat_map).
type ucat struct {
	name, ascii string
	cpt         rune
}

var ucats = [...]ucat{
	{`\p{N}`, `0-9`, 0xD1},
	{`\p{L}`, `A-Za-z`, 0xD2},
	{`\p{P}`, `!-#%-*,-/:-;?-@\[-\]_\{\}`, 0xD3},
	{`\p{M}`, ``, 0xD4},
	{`\p{S}`, `\$\+<->^` + "`" + `\|`, 0xD5}, // no '~': llama.cpp's table misses it
	{`\p{Lu}`, `A-Za-z`, 0xD2},
	{`\p{Ll}`, `A-Za-z`, 0xD2},
	{`\p{Lt}`, `A-Za-z`, 0xD2},
	{`\p{Lm}`, `A-Za-z`, 0xD2},
	{`\p{Lo}`, `A-Za-z`, 0xD2},
}

func usesCategories(p string) bool {
	for _, u := range ucats {
		if strings.Contains(p, u.name) {
			return true
		}
	}
	return false
}

// collapseRegex rewrites each \p{..} into a class of its ASCII members plus its
// collapsed byte, as unicode_regex_split does before calling std::regex.
func collapseRegex(p string) (string, error) {
	for _, r := range p {
		if r >= 128 {
			return "", fmt.Errorf("tokenizer: regex %q mixes unicode categories and non-ASCII characters", p)
		}
	}
	var b strings.Builder
	inside := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '[' && (i == 0 || p[i-1] != '\\') {
			b.WriteByte('[')
			inside = true
			continue
		}
		if inside && c == ']' && p[i-1] != '\\' {
			b.WriteByte(']')
			inside = false
			continue
		}
		if c == '\\' && i+3 < len(p) && p[i+1] == 'p' && p[i+2] == '{' {
			if j := strings.IndexByte(p[i+3:], '}'); j >= 0 && i+3+j <= i+10 {
				name := p[i : i+3+j+1]
				if u, ok := ucatByName(name); ok {
					if !inside {
						b.WriteByte('[')
					}
					fmt.Fprintf(&b, `\u%04X%s`, u.cpt, u.ascii)
					if !inside {
						b.WriteByte(']')
					}
					i += 3 + j
					continue
				}
			}
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

func ucatByName(name string) (ucat, bool) {
	for _, u := range ucats {
		if u.name == name {
			return u, true
		}
	}
	return ucat{}, false
}

// ecmaEnd turns each unescaped '$' outside a class into \z: in ECMAScript
// (std::regex) '$' matches only at the very end, in regexp2 also before a
// final newline.
func ecmaEnd(p string) string {
	var b strings.Builder
	inside := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			b.WriteString(p[i : i+2])
			i++
		case c == '[':
			inside = true
			b.WriteByte(c)
		case c == ']':
			inside = false
			b.WriteByte(c)
		case c == '$' && !inside:
			b.WriteString(`\z`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
