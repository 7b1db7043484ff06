package tokenizer

import "strings"

// fragment is a span of the text to encode: raw text (id -1) or an occurrence
// of a special token.
type fragment struct {
	start, end int // byte span in the text
	id         int32
}

// partition splits text around special tokens the way llama.cpp's
// tokenizer_st_partition does: each special token in turn, longest text
// first, is cut out of every raw fragment that still holds it, left to right.
// Control and unknown tokens take part only when parseSpecial is set;
// user-defined tokens always do. A token with Strip also eats the whitespace
// beside each occurrence.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{0, len(text), -1}}
	var next []fragment
	for _, id := range t.special {
		typ := t.types[id]
		if !parseSpecial && (typ == TypeControl || typ == TypeUnknown) {
			continue
		}
		tok := t.v.Tokens[id]
		if !strings.Contains(text, tok) {
			continue
		}
		var strip Strip
		if int(id) < len(t.v.Strip) {
			strip = t.v.Strip[id]
		}
		next = next[:0]
		for _, f := range frags {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			next = splitFragment(text, f.start, f.end, tok, id, strip, next)
		}
		frags, next = next, frags
	}
	return frags
}

// splitFragment appends the pieces of raw span [start, end) cut around every
// occurrence of tok.
func splitFragment(text string, start, end int, tok string, id int32, strip Strip, out []fragment) []fragment {
	for start < end {
		i := strings.Index(text[start:end], tok)
		if i < 0 {
			return append(out, fragment{start, end, -1})
		}
		left, right := start+i, start+i+len(tok)
		if strip&StripLeft != 0 {
			for left > start && isCSpace(text[left-1]) {
				left--
			}
		}
		if left > start {
			out = append(out, fragment{start, left, -1})
		}
		out = append(out, fragment{id: id})
		if strip&StripRight != 0 {
			for right < end && isCSpace(text[right]) {
				right++
			}
		}
		start = right
	}
	return out
}

// isCSpace is C's isspace in the "C" locale.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
