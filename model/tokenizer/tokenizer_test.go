package tokenizer

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

// TestParseSpecial checks special-token partitioning: control tokens only
// with parseSpecial, each raw fragment after a special token getting the
// SentencePiece space prefix, and Phi-3's right-strip of the whitespace after
// its special tokens.
func TestParseSpecial(t *testing.T) {
	spm := loadTokenizer(t, "vocab/ggml-vocab-llama-spm.gguf")
	phi := loadTokenizer(t, "vocab/ggml-vocab-phi-3.gguf")
	for _, tc := range []struct {
		name         string
		tok          *Tokenizer
		text         string
		addSpecial   bool
		parseSpecial bool
		want         []int32
	}{
		{"llama control parsed", spm, "<s>Hello</s>", false, true, []int32{1, 15043, 2}},
		{"llama control as text", spm, "<s>", false, false, []int32{529, 29879, 29958}},
		{"llama BOS and parsed", spm, "Hello</s>", true, true, []int32{1, 15043, 2}},
		{"llama empty with BOS", spm, "", true, false, []int32{1}},
		{"phi-3 chat, rstrip", phi, "<|user|>\nHello<|end|>\n<|assistant|>", true, true, []int32{1, 32010, 15043, 32007, 32001}},
		{"phi-3 unknown pad token parsed", phi, "[PAD32011]", false, true, []int32{32011}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tok.Encode(tc.text, tc.addSpecial, tc.parseSpecial)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q, %v, %v) = %v, want %v", tc.text, tc.addSpecial, tc.parseSpecial, got, tc.want)
			}
		})
	}
}

// TestPartition checks tokenizer_st_partition on a hand-made vocabulary:
// longest token first, user-defined tokens always, strip attributes.
func TestPartition(t *testing.T) {
	v := &Vocab{
		Model:  "llama",
		Tokens: []string{"<unk>", "<s>", "</s>", "<a>", "<ab>", "[U]", "▁", "x"},
		Types:  []TokenType{TypeUnknown, TypeControl, TypeControl, TypeControl, TypeControl, TypeUserDefined, TypeNormal, TypeNormal},
		Strip:  []Strip{0, 0, 0, StripLeft, 0, StripLeft | StripRight, 0, 0},
		BOS:    1, EOS: 2, UNK: 0, EOT: -1, SEP: -1,
	}
	tok := mustNew(t, v)
	type frag struct {
		text string
		id   int32
	}
	for _, tc := range []struct {
		text  string
		parse bool
		want  []frag
	}{
		{"x<ab>x", true, []frag{{"x", -1}, {"", 4}, {"x", -1}}},
		{"x<ab>x", false, []frag{{"x<ab>x", -1}}},
		{"x  [U]  x", false, []frag{{"x", -1}, {"", 5}, {"x", -1}}},
		{"x <a> x", true, []frag{{"x", -1}, {"", 3}, {" x", -1}}},
		{"<s><s>", true, []frag{{"", 1}, {"", 1}}},
		{" \t[U]", false, []frag{{"", 5}}},
		{"", true, nil},
	} {
		var got []frag
		for _, f := range tok.partition(tc.text, tc.parse) {
			if f.id >= 0 {
				got = append(got, frag{"", f.id})
			} else {
				got = append(got, frag{tc.text[f.start:f.end], -1})
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("partition(%q, %v) = %q, want %q", tc.text, tc.parse, got, tc.want)
		}
	}
}

func TestTokenPiece(t *testing.T) {
	tok := loadTokenizer(t, "vocab/ggml-vocab-llama-spm.gguf")
	for _, tc := range []struct {
		id      int32
		special bool
		want    string
	}{
		{1, false, ""},       // <s>: control
		{1, true, "<s>"},     // rendered when asked
		{0, false, ""},       // <unk>: unknown
		{13, false, "\n"},    // <0x0A>
		{243, false, "\xf0"}, // <0xF0>: part of a character
		{15043, false, " Hello"},
		{-1, true, ""},
		{32000, true, ""},
	} {
		if got := string(tok.TokenPiece(tc.id, tc.special)); got != tc.want {
			t.Errorf("TokenPiece(%d, %v) = %q, want %q", tc.id, tc.special, got, tc.want)
		}
	}
	// Decode strips the space of the first token only; a BOS in front keeps it.
	for _, tc := range []struct {
		ids  []int32
		want string
	}{
		{[]int32{15043, 3186}, "Hello world"},
		{[]int32{1, 15043}, " Hello"},
	} {
		if got := tok.Decode(tc.ids); got != tc.want {
			t.Errorf("Decode(%v) = %q, want %q", tc.ids, got, tc.want)
		}
	}
	if got := tok.Detokenize([]int32{1, 15043, 2}, true, false); got != " Hello" {
		t.Errorf("Detokenize(remove special) = %q", got)
	}
	if got := tok.Detokenize([]int32{15043, 2}, false, true); got != "Hello</s>" {
		t.Errorf("Detokenize(unparse special) = %q", got)
	}
}

func TestFromGGUFFlags(t *testing.T) {
	for _, tc := range []struct {
		rel                                 string
		addBOS, addSpacePrefix, cleanSpaces bool
		nl                                  int32
	}{
		{"stories260K.gguf", true, true, false, 13},              // <0x0A>
		{"TinyStories-656K-Q8_0.gguf", true, true, false, 3},     // "\n"
		{"vocab/ggml-vocab-bert-bge.gguf", true, false, true, 0}, // PAD
	} {
		v := loadTokenizer(t, tc.rel).Vocab()
		if v.AddBOS != tc.addBOS || v.AddSpacePrefix != tc.addSpacePrefix || v.CleanSpaces != tc.cleanSpaces || v.NL != tc.nl {
			t.Errorf("%s: AddBOS %v AddSpacePrefix %v CleanSpaces %v NL %d, want %v %v %v %d", tc.rel,
				v.AddBOS, v.AddSpacePrefix, v.CleanSpaces, v.NL, tc.addBOS, tc.addSpacePrefix, tc.cleanSpaces, tc.nl)
		}
	}
	phi := loadTokenizer(t, "vocab/ggml-vocab-phi-3.gguf").Vocab()
	for id, want := range map[int32]Strip{1: 0, 2: StripRight, 32000: 0, 32007: StripRight, 32011: StripRight, 15043: 0} {
		if phi.Strip[id] != want {
			t.Errorf("phi-3 Strip[%d] = %d, want %d", id, phi.Strip[id], want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	base := func() *Vocab {
		return &Vocab{Model: "llama", Tokens: []string{"<unk>", "<s>", "</s>"}, BOS: 1, EOS: 2, UNK: 0, SEP: -1}
	}
	for _, tc := range []struct {
		name   string
		mutate func(v *Vocab)
		is     error
	}{
		{"unsupported model", func(v *Vocab) { v.Model = "t5" }, ErrUnsupported},
		{"duplicate token", func(v *Vocab) { v.Tokens[2] = "<s>" }, nil},
		{"no tokens", func(v *Vocab) { v.Tokens = nil }, nil},
		{"BOS out of range", func(v *Vocab) { v.BOS = 3 }, nil},
		{"add BOS without BOS", func(v *Vocab) { v.BOS, v.AddBOS = -1, true }, nil},
		{"short scores", func(v *Vocab) { v.Scores = []float32{0} }, nil},
	} {
		v := base()
		tc.mutate(v)
		_, err := New(v)
		if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: New err = %v", tc.name, err)
		}
	}
	if _, err := New(base()); err != nil {
		t.Errorf("New(valid) = %v", err)
	}
}

// TestConcurrentEncode shares one Tokenizer between goroutines (run with -race).
func TestConcurrentEncode(t *testing.T) {
	tok := loadTokenizer(t, "vocab/ggml-vocab-llama-spm.gguf")
	want, _ := tok.Encode("Hello, y'all! How are you 😁 ?", true, false)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, _ := tok.Encode("Hello, y'all! How are you 😁 ?", true, false)
				if !slices.Equal(got, want) {
					t.Errorf("concurrent Encode = %v, want %v", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
