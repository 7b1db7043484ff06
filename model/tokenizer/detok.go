package tokenizer

import "unicode/utf8"

// Decoder turns a stream of token ids into text, one id at a time, without
// ever splitting a UTF-8 character: bytes of a character that is still
// incomplete (a multi-byte character spread over byte tokens, or over
// byte-level BPE tokens) are held until it completes. Bytes that can never
// form a character come out as U+FFFD, one per byte.
//
// A Decoder from NewDecoder yields, over a whole sequence, exactly what
// Decode yields for it (with invalid bytes replaced). A Decoder is not safe
// for concurrent use; the Tokenizer behind it is.
type Decoder struct {
	t          *Tokenizer
	stripFirst bool          // drop one leading space of the first token's piece
	clean      *spaceCleaner // nil: no clean-up of spaces
	started    bool          // a token has been added
	pending    []byte        // decoded bytes not yet returned
	out        []byte        // scratch for the returned text
}

// NewDecoder returns a Decoder with Decode's rules (llama_detokenize): the
// first token loses one leading space when the vocabulary adds a space
// prefix, and spaces are cleaned up when the vocabulary asks for it.
func NewDecoder(t *Tokenizer) *Decoder {
	d := &Decoder{t: t, stripFirst: t.v.AddSpacePrefix}
	if t.v.CleanSpaces {
		d.clean = &spaceCleaner{}
	}
	return d
}

// NewStreamDecoder returns a Decoder that concatenates token pieces as they
// are, the way llama.cpp's server streams generated tokens
// (common_token_to_piece per token): no leading-space removal, no clean-up.
// Use it for text that continues a prompt.
func NewStreamDecoder(t *Tokenizer) *Decoder {
	return &Decoder{t: t}
}

// Add decodes one more token and returns the text that is now complete,
// possibly empty.
func (d *Decoder) Add(id int32) string {
	p := d.t.TokenPiece(id, false)
	if !d.started {
		d.started = true
		if d.stripFirst && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
	}
	if d.clean != nil {
		d.pending = d.clean.write(p, d.pending)
	} else {
		d.pending = append(d.pending, p...)
	}
	return d.emit(false)
}

// Flush ends the sequence and returns whatever is still held, with bytes of
// an unfinished character as U+FFFD. The Decoder is then as new.
func (d *Decoder) Flush() string {
	if d.clean != nil {
		d.pending = d.clean.flush(d.pending)
	}
	s := d.emit(true)
	d.started = false
	return s
}

// emit returns the complete characters at the front of pending and keeps the
// rest; final returns everything.
func (d *Decoder) emit(final bool) string {
	b := d.pending
	d.out = d.out[:0]
	for len(b) > 0 {
		if !final && !utf8.FullRune(b) {
			break // the start of a character whose other bytes are yet to come
		}
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			d.out = utf8.AppendRune(d.out, utf8.RuneError)
		} else {
			d.out = append(d.out, b[:n]...)
		}
		b = b[n:]
	}
	d.pending = append(d.pending[:0], b...)
	return string(d.out)
}
