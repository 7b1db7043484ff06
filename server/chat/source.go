package chat

import (
	"regexp"
	"strings"

	"github.com/nikolalohinski/gonja/v2/tokens"
)

// fixSource rewrites a template's source where gonja would read it otherwise
// than jinja2 (see each fix). Line numbers stay.
func fixSource(src string) string {
	src = normalizeSource(src)
	src = mapTags(src, func(body string) string { return liftConditionals(escapeBackslashes(body)) })
	return protectLStrip(src)
}

// protectLStrip works around the one place where gonja's lstrip_blocks
// differs from jinja2's. jinja2 strips the spaces before a {% or {# tag only
// when they start a line: after a newline, at the start of the template, or
// after a tag whose match ended with a newline (trim_blocks). gonja also
// strips spaces that follow a tag on the same line, as in "{{ x }}  {% if y %}".
// Those spaces are turned into an expression, which lstrip leaves alone.
func protectLStrip(src string) string {
	cfg := newConfig()
	cfg.LeftStripBlocks = false
	src = normalizeSource(src)
	var toks []*tokens.Token
	for s := tokens.LexAll(src, cfg); !s.End(); {
		toks = append(toks, s.Next())
	}
	var b strings.Builder
	last := 0
	for i := 1; i+1 < len(toks); i++ {
		tok, prev, next := toks[i], toks[i-1], toks[i+1]
		if tok.Type != tokens.Data || strings.Trim(tok.Val, " \t") != "" ||
			(next.Val != "{%" && next.Val != "{#") ||
			prev.Type == tokens.CommentBegin || strings.HasPrefix(prev.Val, "-") ||
			tok.Pos == 0 || src[tok.Pos-1] == '\n' || afterRaw(toks, i) {
			continue
		}
		b.WriteString(src[last:tok.Pos])
		b.WriteString(`{{ "` + tok.Val + `" }}`)
		last = tok.Pos + len(tok.Val)
	}
	if last == 0 {
		return src
	}
	b.WriteString(src[last:])
	return b.String()
}

// afterRaw reports whether toks[i] is the body of {% raw %}.
func afterRaw(toks []*tokens.Token, i int) bool {
	return i >= 3 && toks[i-3].Type == tokens.BlockBegin && toks[i-2].Val == "raw"
}

// normalizeSource writes every line break as \n, as gonja's lexer (and
// jinja2's) does before lexing, so that token positions index src. (The
// lexer also drops a trailing newline, which moves no position.)
func normalizeSource(src string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	return strings.ReplaceAll(src, "\r", "\n")
}

// mapTags returns src with the body of each {{ }} and {% %} tag (outside
// comments and raw blocks) replaced by fn(body).
func mapTags(src string, fn func(body string) string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(src); i++ {
		switch {
		case strings.HasPrefix(src[i:], "{#"):
			end := strings.Index(src[i:], "#}")
			if end < 0 {
				return src // unclosed: gonja reports it
			}
			i += end + 1
		case strings.HasPrefix(src[i:], "{{") || strings.HasPrefix(src[i:], "{%"):
			if raw := rawEnd(src, i); raw > 0 {
				i = raw - 1
				continue
			}
			closing := "}}"
			if src[i+1] == '%' {
				closing = "%}"
			}
			start := i + 2
			end := start
			for end < len(src) && !strings.HasPrefix(src[end:], closing) {
				if src[end] == '\'' || src[end] == '"' {
					end = stringEnd(src, end)
				} else {
					end++
				}
			}
			if end >= len(src) {
				return src
			}
			b.WriteString(src[last:start])
			b.WriteString(fn(src[start:end]))
			last = end
			i = end + 1
		}
	}
	b.WriteString(src[last:])
	return b.String()
}

// stringEnd returns the index past the string literal starting at s[i].
func stringEnd(s string, i int) int {
	quote := s[i]
	for i++; i < len(s) && s[i] != quote; i++ {
		if s[i] == '\\' {
			i++
		}
	}
	return min(i+1, len(s))
}

// escapeBackslashes rewrites the escapes in a tag's string literals whose
// meaning gonja's differs from Python's: gonja ends a literal at a quote
// preceded by an escaped backslash ('\\'), and its Go unquoting rejects
// escapes Python keeps as they are ('\d') and line continuations, and reads
// \xHH as a byte. The backslashes become \x5c, \xHH becomes \u00HH, a line
// continuation goes.
func escapeBackslashes(body string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(body); i++ {
		if body[i] != '\'' && body[i] != '"' {
			continue
		}
		end := stringEnd(body, i)
		for i++; i < end-1; i++ {
			if body[i] != '\\' {
				continue
			}
			next, rest := body[i+1], body[i+2:]
			var repl string // and the escape's length in body
			n := 2
			switch {
			case next == '\\':
				repl = `\x5c` // the escaped backslash
			case next == '\n':
				repl = "" // a line continuation: Python drops both
			case next == 'x' && len(rest) >= 2 && isHex(rest[0]) && isHex(rest[1]):
				repl, n = `\u00`+rest[:2], 4 // Go's \xHH is a byte, Python's U+00HH
			case !strings.ContainsRune("'\"abfnrtvuU01234567", rune(next)):
				repl, n = `\x5c`, 1 // an unknown escape: Python keeps the backslash
			default:
				i++ // keep the escape whole: \' does not end the literal
				continue
			}
			b.WriteString(body[last:i])
			b.WriteString(repl)
			i += n - 1
			last = i + 1
		}
	}
	if last == 0 {
		return body
	}
	b.WriteString(body[last:])
	return b.String()
}

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

// rawEnd returns the end of the {% raw %}…{% endraw %} block starting at i,
// or 0 when none starts there.
func rawEnd(src string, i int) int {
	m := rawBlock.FindStringIndex(src[i:])
	if m == nil || m[0] != 0 {
		return 0
	}
	return i + m[1]
}

var rawBlock = regexp.MustCompile(`^\{%[-+]?\s*raw\s*[-+]?%\}(?s:.*?)\{%[-+]?\s*endraw\s*[-+]?%\}`)
