package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// toValidUTF8 replaces each byte that is not part of a valid UTF-8 sequence
// with U+FFFD, as Decoder does.
func toValidUTF8(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// decodeStream feeds ids one at a time and checks every chunk is valid UTF-8.
func decodeStream(t *testing.T, d *Decoder, ids []int32) string {
	t.Helper()
	var b strings.Builder
	for _, id := range ids {
		s := d.Add(id)
		if !utf8.ValidString(s) {
			t.Fatalf("Add(%d) = %q: not valid UTF-8", id, s)
		}
		b.WriteString(s)
	}
	b.WriteString(d.Flush())
	return b.String()
}

// TestDecoderMatchesDecode feeds every vector case's ids one at a time: the
// pieces must add up to Decode. gpt-2 and bert-bge clean up spaces, so the
// cleaner's hold-back is exercised too.
func TestDecoderMatchesDecode(t *testing.T) {
	for _, name := range []string{"llama-spm", "phi-3", "bert-bge", "gpt-2"} {
		t.Run(name, func(t *testing.T) {
			rel := "vocab/ggml-vocab-" + name + ".gguf"
			tok := loadTokenizer(t, rel)
			d := NewDecoder(tok) // reused: Flush resets it
			for i, v := range readVectors(t, rel) {
				want := toValidUTF8(tok.Decode(v.ids))
				if got := decodeStream(t, d, v.ids); got != want {
					t.Errorf("case %d: streamed %q, Decode %q", i, got, want)
				}
				var pieces []byte
				for _, id := range v.ids {
					pieces = append(pieces, tok.TokenPiece(id, false)...)
				}
				if got := decodeStream(t, NewStreamDecoder(tok), v.ids); got != toValidUTF8(string(pieces)) {
					t.Errorf("case %d: stream decoder %q, pieces %q", i, got, pieces)
				}
			}
		})
	}
}

// TestDecoderHoldsPartialCharacters splits characters over byte tokens.
func TestDecoderHoldsPartialCharacters(t *testing.T) {
	tok := loadTokenizer(t, "vocab/ggml-vocab-llama-spm.gguf")
	d := NewDecoder(tok)
	// " 🦙.cpp" is ▁ <0xF0> <0x9F> <0xA6> <0x99> . cpp
	ids := []int32{29871, 243, 162, 169, 156, 29889, 8223}
	var got []string
	for _, id := range ids {
		got = append(got, d.Add(id))
	}
	got = append(got, d.Flush())
	want := []string{"", "", "", "", "🦙", ".", "cpp", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("chunks %q, want %q", got, want)
	}
	// A character cut off at the end comes out as U+FFFD per byte.
	d.Add(29871)
	d.Add(243)
	if s := d.Add(162); s != "" {
		t.Errorf("Add of a partial character = %q", s)
	}
	if s := d.Flush(); s != "\uFFFD\uFFFD" {
		t.Errorf("Flush = %q, want two U+FFFD", s)
	}
	// A stray continuation byte can never complete: it is replaced at once.
	if s := d.Add(tok.pieceID(t, "<0x80>")); s != "\uFFFD" {
		t.Errorf("Add(<0x80>) = %q", s)
	}
}

// pieceID looks up a token by its text.
func (tok *Tokenizer) pieceID(t *testing.T, text string) int32 {
	t.Helper()
	id, ok := tok.TokenID(text)
	if !ok {
		t.Fatalf("no token %q", text)
	}
	return id
}

// cleanSpacesRef is a line-by-line port of the clean_spaces passes of
// llama.cpp's detokenize, to check spaceCleaner against.
func cleanSpacesRef(s string) string {
	text := []byte(s)
	total := len(text)
	// pass runs one loop of detokenize over text[:total]; body says whether
	// to drop the byte written last (a space) and whether to skip the next.
	pass := func(body func(i int, x byte, n int) (drop, skip bool)) {
		n := total
		total = min(total, 1)
		for i := 1; i < n; i++ {
			x := text[i]
			drop, skip := body(i, x, n)
			if drop {
				total--
			}
			if skip {
				i++
				text[i] = 0
			}
			text[total] = x
			total++
		}
	}
	pass(func(i int, x byte, _ int) (bool, bool) {
		return text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','), false
	})
	pass(func(i int, x byte, n int) (bool, bool) {
		m := x == '\'' && i+1 < n && text[i-1] == ' ' && text[i+1] == ' '
		return m, m
	})
	pass(func(i int, x byte, n int) (bool, bool) {
		if text[i-1] != ' ' || x != '\'' || i+1 >= n {
			return false, false
		}
		switch x1 := text[i+1]; {
		case x1 == 's' || x1 == 'm':
			return true, false
		case x1 == 't' || x1 == 'd':
		case i+2 < n && (x1 == 'r' || x1 == 'v') && text[i+2] == 'e':
			return true, false
		}
		return false, false
	})
	return string(text[:total])
}

func TestSpaceCleaner(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Hello , world !", "Hello, world!"},
		{"it ' s", "it's"},
		{"it 's he 're we 've I 'm", "it's he're we've I'm"},
		{"don 't I 'd you 'll", "don 't I 'd you 'll"},
		{" .", "."},
		{"a '", "a '"},
		{"a 'r", "a 'r"},
		{"x ' ' y", "x'' y"},
	} {
		if got := cleanSpacesRef(tc.in); got != tc.want {
			t.Errorf("reference(%q) = %q, want %q", tc.in, got, tc.want)
		}
		var c spaceCleaner
		if got := string(c.flush(c.write([]byte(tc.in), nil))); got != tc.want {
			t.Errorf("spaceCleaner(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Random texts over the bytes that matter, written in random chunks.
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = " '.,?!smrvetdlxl"
	for range 20000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		var c spaceCleaner
		var got []byte
		for rest := b; len(rest) > 0; {
			n := 1 + rng.IntN(len(rest))
			got = c.write(rest[:n], got)
			rest = rest[n:]
		}
		got = c.flush(got)
		if want := cleanSpacesRef(string(b)); string(got) != want {
			t.Fatalf("spaceCleaner(%q) = %q, reference %q", b, got, want)
		}
	}
}
