package tokenizer

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// WordPiece (tokenizer.ggml.model "bert"), as llama.cpp's
// llm_tokenizer_wpm_session does it. GGUF BERT vocabularies mark word starts
// with U+2581 instead of marking continuations with "##", so each word gets a
// ▁ prefix and is then matched greedily, longest token first; a word with a
// position no token matches becomes one UNK.

// wpmEncoder is immutable after newWPM.
type wpmEncoder struct {
	ids          map[string]int32
	maxTokenLen  int // bytes
	unk          int32
	lowercase    bool
	stripAccents bool
}

func newWPM(t *Tokenizer) *wpmEncoder {
	e := &wpmEncoder{ids: t.ids, unk: t.v.UNK, lowercase: t.v.Lowercase, stripAccents: t.v.StripAccents}
	for _, tok := range t.v.Tokens {
		e.maxTokenLen = max(e.maxTokenLen, len(tok))
	}
	return e
}

func (e *wpmEncoder) encode(text string, out []int32) []int32 {
	for _, word := range e.preprocess(text) {
		w := spmSpace + word
		n := len(w)
		start := len(out)
		for i := 0; i < n; i++ {
			matched := false
			for j := min(n, i+e.maxTokenLen+1); j > i; j-- {
				if id, ok := e.ids[w[i:j]]; ok {
					out = append(out, id)
					matched = true
					i = j - 1
					break
				}
			}
			if !matched {
				out = out[:start] // a word that does not tokenize fully is UNK
				break
			}
		}
		if len(out) == start && e.unk >= 0 {
			out = append(out, e.unk)
		}
	}
	return out
}

// preprocess is llama.cpp's BERT pre-tokenizer: optional "NFD" (each code
// point mapped to the first code point of its decomposition), drop controls,
// NUL, U+FFFD and (when stripping accents) combining marks, lowercase, split
// on whitespace and make every punctuation mark, ASCII symbol and CJK
// ideograph a word of its own.
func (e *wpmEncoder) preprocess(text string) []string {
	var words []string
	var cur []byte
	var nfd []byte
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range text { // invalid UTF-8 decodes to U+FFFD, as in llama.cpp
		if e.stripAccents && r >= 0xC0 {
			nfd = norm.NFD.AppendString(nfd[:0], string(r))
			r, _ = utf8.DecodeRune(nfd)
		}
		if unicode.Is(unicode.White_Space, r) {
			flush()
			continue
		}
		if r == 0 || r == utf8.RuneError || wpmIsControl(r) {
			continue
		}
		if e.stripAccents && unicode.IsMark(r) {
			continue
		}
		lr := r
		if e.lowercase {
			lr = unicode.ToLower(r)
		}
		if unicode.IsPunct(r) || (r < 0x7F && unicode.IsSymbol(r)) || wpmIsCJK(r) {
			flush()
			words = append(words, string(lr))
			continue
		}
		cur = utf8.AppendRune(cur, lr)
	}
	flush()
	return words
}

// wpmIsControl is llama.cpp's is_control flag: Unicode category C, which in
// its tables includes unassigned code points.
func wpmIsControl(r rune) bool {
	if unicode.Is(unicode.C, r) {
		return true
	}
	return !unicode.IsLetter(r) && !unicode.IsMark(r) && !unicode.IsNumber(r) &&
		!unicode.IsPunct(r) && !unicode.IsSymbol(r) && !unicode.Is(unicode.Z, r)
}

// wpmIsCJK is llama.cpp's is_chinese_char (with its 0x2B920 lower bound,
// copied from Hugging Face).
func wpmIsCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
