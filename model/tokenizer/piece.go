package tokenizer

import "strings"

// piece is llama.cpp's token_to_piece(special=true) for id: the bytes the
// token stands for. Unused and undefined tokens give nothing.
func (t *Tokenizer) piece(id int32) []byte {
	text := t.v.Tokens[id]
	switch t.types[id] {
	case TypeControl, TypeUnknown, TypeUserDefined:
		return []byte(text)
	case TypeNormal:
		if t.kind == kindBPE && !t.v.EscapeWhitespaces {
			return bpeTokenBytes(text)
		}
		return []byte(strings.ReplaceAll(text, spmSpace, " "))
	case TypeByte:
		if b, ok := parseByteToken(text); ok {
			return []byte{b}
		}
	}
	return nil
}

// parseByteToken reads a "<0xNN>" byte token.
func parseByteToken(text string) (byte, bool) {
	if len(text) != 6 || text[:3] != "<0x" || text[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexDigit(text[3])
	lo, ok2 := hexDigit(text[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// TokenPiece returns the bytes id stands for, as llama.cpp's token_to_piece:
// control and unknown tokens give nothing unless special is set. The bytes
// may be part of a UTF-8 sequence (byte tokens, byte-level BPE); the caller
// must not modify them. An id outside the vocabulary gives nil.
func (t *Tokenizer) TokenPiece(id int32, special bool) []byte {
	if id < 0 || int(id) >= len(t.pieces) {
		return nil
	}
	if !special && (t.types[id] == TypeControl || t.types[id] == TypeUnknown) {
		return nil
	}
	return t.pieces[id]
}

// Decode turns ids back into text as llama.cpp's llama_detokenize with
// remove_special and unparse_special false: control tokens vanish, the first
// token loses one leading space when the vocabulary adds a space prefix, and
// clean_up_tokenization_spaces applies where the vocabulary asks for it. The
// result holds the raw bytes, which need not be valid UTF-8.
func (t *Tokenizer) Decode(ids []int32) string {
	return t.Detokenize(ids, false, false)
}

// Detokenize is llama_detokenize: removeSpecial drops a leading BOS and a
// trailing EOS that the vocabulary adds itself; unparseSpecial renders
// control tokens as their text.
func (t *Tokenizer) Detokenize(ids []int32, removeSpecial, unparseSpecial bool) string {
	removeSpace := t.v.AddSpacePrefix
	if removeSpecial && t.v.AddBOS && len(ids) > 0 && ids[0] == t.v.BOS {
		removeSpace = false
		ids = ids[1:]
	}
	if removeSpecial && t.v.AddEOS && len(ids) > 0 && ids[len(ids)-1] == t.v.EOS {
		ids = ids[:len(ids)-1]
	}
	var buf []byte
	for i, id := range ids {
		p := t.TokenPiece(id, unparseSpecial)
		if i == 0 && removeSpace && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		buf = append(buf, p...)
	}
	if t.v.CleanSpaces {
		var c spaceCleaner
		buf = c.flush(c.write(buf, nil))
	}
	return string(buf)
}
