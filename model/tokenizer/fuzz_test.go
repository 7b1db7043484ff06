package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// encodeChecked encodes text, failing the test on an error or an id outside
// tok's vocabulary.
func encodeChecked(t *testing.T, tok *Tokenizer, text string, addSpecial, parseSpecial bool) []int32 {
	t.Helper()
	ids, err := tok.Encode(text, addSpecial, parseSpecial)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if id < 0 || int(id) >= tok.VocabSize() {
			t.Fatalf("Encode(%q) = %v: id %d outside the vocabulary", text, ids, id)
		}
	}
	return ids
}

// FuzzEncodeSPM checks, on the Llama 2 SentencePiece vocabulary (which has
// byte tokens), that encoding never panics, that decoding gives the text
// back, and that the incremental Decoder agrees with Decode. Exempt from the
// round trip are texts holding U+2581, which SentencePiece cannot tell from an
// escaped space, and invalid UTF-8: llama.cpp cuts symbols by lead byte, so an
// invalid lead byte swallows the bytes after it, an escaped space included,
// and they come back as raw bytes. The same texts must not break
// TinyStories-656K, which has no byte tokens.
func FuzzEncodeSPM(f *testing.F) {
	spm := loadTokenizer(f, "vocab/ggml-vocab-llama-spm.gguf")
	tiny := loadTokenizer(f, "TinyStories-656K-Q8_0.gguf")
	for _, s := range []string{"", " ", "Hello world", "  leading", "trailing  ", "\n\t\r", "🦙.cpp",
		"Cửa Việt", "\xff\xfe invalid", "<s>not special</s>", "a\u2581b", "日本語のテキスト", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ids := encodeChecked(t, spm, text, false, false)
		back := spm.Decode(ids)
		if utf8.ValidString(text) && !strings.Contains(text, spmSpace) && back != text {
			t.Fatalf("Decode(Encode(%q)) = %q", text, back)
		}
		d := NewDecoder(spm)
		var streamed strings.Builder
		for _, id := range ids {
			streamed.WriteString(d.Add(id))
		}
		streamed.WriteString(d.Flush())
		if streamed.String() != toValidUTF8(back) {
			t.Fatalf("Decoder gave %q, Decode %q", streamed.String(), back)
		}
		withBOS, _ := spm.Encode(text, true, false)
		if len(withBOS) == 0 || withBOS[0] != spm.BOS() || !slices.Equal(withBOS[1:], ids) {
			t.Fatalf("Encode(%q, addSpecial) = %v, want BOS then %v", text, withBOS, ids)
		}
		encodeChecked(t, tiny, text, true, true)
	})
}
