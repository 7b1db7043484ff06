package tokenizer

import "unicode"

// Unicode handling as llama.cpp's src/unicode.cpp does it: its lenient UTF-8
// decoder, its code point category flags, and GPT-2's byte-to-unicode map.

// cptFlags are llama.cpp's unicode_cpt_flags bits for one code point: the
// general category (one bit) plus whitespace. A position outside the text has
// no bits at all; an unassigned code point has only cptUndefined.
type cptFlags uint16

const (
	cptUndefined  cptFlags = 0x0001 // Cn
	cptNumber     cptFlags = 0x0002 // \p{N}
	cptLetter     cptFlags = 0x0004 // \p{L}
	cptSeparator  cptFlags = 0x0008 // \p{Z}
	cptMark       cptFlags = 0x0010 // \p{M}
	cptPunct      cptFlags = 0x0020 // \p{P}
	cptSymbol     cptFlags = 0x0040 // \p{S}
	cptControl    cptFlags = 0x0080 // \p{C} but Cn
	cptWhitespace cptFlags = 0x0100 // White_Space
)

const cptCategories = cptUndefined | cptNumber | cptLetter | cptSeparator | cptMark | cptPunct | cptSymbol | cptControl

// asciiFlags is filled once at package initialisation and only read after.
var asciiFlags = func() (t [128]cptFlags) {
	for r := range rune(128) {
		t[r] = categoryFlags(r)
	}
	return t
}()

// flagsOf returns the flags of code point r.
func flagsOf(r rune) cptFlags {
	if r >= 0 && r < 128 {
		return asciiFlags[r]
	}
	return categoryFlags(r)
}

func categoryFlags(r rune) cptFlags {
	var f cptFlags
	switch {
	case r < 0 || r > unicode.MaxRune:
		return cptUndefined
	case unicode.IsLetter(r):
		f = cptLetter
	case unicode.IsMark(r):
		f = cptMark
	case unicode.IsNumber(r):
		f = cptNumber
	case unicode.IsPunct(r):
		f = cptPunct
	case unicode.IsSymbol(r):
		f = cptSymbol
	case unicode.Is(unicode.Z, r):
		f = cptSeparator
	case unicode.Is(unicode.C, r) || (r >= 0xD800 && r <= 0xDFFF):
		f = cptControl
	default:
		f = cptUndefined
	}
	if unicode.Is(unicode.White_Space, r) {
		f |= cptWhitespace
	}
	return f
}

// decodeCpts splits text into code points the way llama.cpp's
// unicode_cpts_from_utf8 does: it accepts overlong forms and surrogates, and
// turns each byte it cannot decode into U+FFFD.
func decodeCpts(text string, cpts []rune) []rune {
	for i := 0; i < len(text); {
		r, n := decodeCpt(text, i)
		cpts = append(cpts, r)
		i += n
	}
	return cpts
}

func decodeCpt(s string, i int) (rune, int) {
	b := s[i]
	cont := func(k int) bool { return i+k < len(s) && s[i+k]&0xC0 == 0x80 }
	switch {
	case b&0x80 == 0:
		return rune(b), 1
	case b&0x40 == 0:
	case b&0x20 == 0:
		if cont(1) {
			return rune(b&0x1F)<<6 | rune(s[i+1]&0x3F), 2
		}
	case b&0x10 == 0:
		if cont(1) && cont(2) {
			return rune(b&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3
		}
	case b&0x08 == 0:
		if cont(1) && cont(2) && cont(3) {
			r := rune(b&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
			if r > unicode.MaxRune { // llama.cpp cannot re-encode these either
				r = unicode.ReplacementChar
			}
			return r, 4
		}
	}
	return unicode.ReplacementChar, 1
}

// appendCpt appends the UTF-8 form of r, surrogates included (llama.cpp's
// unicode_cpt_to_utf8; utf8.AppendRune would replace them).
func appendCpt(b []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(b, byte(r))
	case r < 0x800:
		return append(b, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return append(b, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
}

// byteRunes is GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for
// themselves, the other 68 are shifted to U+0100 and up, in byte order.
var byteRunes = func() (m [256]rune) {
	n := rune(0)
	for b := range 256 {
		if b >= 0x21 && b <= 0x7E || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			m[b] = rune(b)
		} else {
			m[b] = 256 + n
			n++
		}
	}
	return m
}()

// runeByte inverts byteRunes; runes past its end are not byte-level symbols.
var runeByte = func() (m [256 + 68]int16) {
	for i := range m {
		m[i] = -1
	}
	for b, r := range byteRunes {
		m[r] = int16(b)
	}
	return m
}()

// byteOfRune returns the byte a byte-level rune stands for.
func byteOfRune(r rune) (byte, bool) {
	if r < 0 || int(r) >= len(runeByte) || runeByte[r] < 0 {
		return 0, false
	}
	return byte(runeByte[r]), true
}

// bpeTokenBytes turns byte-level BPE token text into the raw bytes it stands
// for. Runes outside the byte map (added tokens such as "<|im_start|>" are
// ASCII and map to themselves) are kept as their UTF-8.
func bpeTokenBytes(token string) []byte {
	out := make([]byte, 0, len(token))
	for _, r := range token {
		if b, ok := byteOfRune(r); ok {
			out = append(out, b)
		} else {
			out = appendCpt(out, r)
		}
	}
	return out
}

// rawBPEText is bpeTokenBytes for a token made only of byte-level runes; ok is
// false when some rune is not one, so no byte-level word can ever equal it.
func rawBPEText(token string) (raw string, ok bool) {
	out := make([]byte, 0, len(token))
	for _, r := range token {
		b, ok := byteOfRune(r)
		if !ok {
			return "", false
		}
		out = append(out, b)
	}
	return string(out), true
}

// toLowerCpt is llama.cpp's unicode_tolower: the simple lowercase mapping.
func toLowerCpt(r rune) rune {
	if r < 0 || r > unicode.MaxRune {
		return r
	}
	return unicode.ToLower(r)
}
