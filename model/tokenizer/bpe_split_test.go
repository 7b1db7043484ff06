package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dlclark/regexp2"
)

// splitWords runs splitters over text and returns the pieces.
func splitWords(ss []splitter, text string) []string {
	t := splitText{cpts: decodeCpts(text, nil)}
	for _, r := range t.cpts {
		t.flags = append(t.flags, flagsOf(r))
	}
	segs := []int{len(t.cpts)}
	for _, s := range ss {
		segs = s.split(&t, segs, nil)
	}
	var words []string
	pos := 0
	for _, n := range segs {
		words = append(words, string(t.cpts[pos:pos+n]))
		pos += n
	}
	return words
}

// stdRegexSplit is how llama.cpp runs pattern: std::regex over the collapsed text.
func stdRegexSplit(t *testing.T, pattern string) splitter {
	t.Helper()
	expr, err := collapseRegex(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return &regexSplit{re: regexp2.MustCompile(expr, regexp2.None), mode: regexCollapsed}
}

// randomText draws from characters that exercise every branch of the
// splitters: letters, marks, numbers, each kind of whitespace, contractions,
// punctuation, symbols, controls, unassigned code points and bad bytes.
func randomText(r *rand.Rand) string {
	parts := []string{"a", "Z", "é", "ß", "Я", "我", "\u0301", "ـ", "0", "7", "½", "٣", "Ⅻ", " ", "  ", "\t", "\n", "\r",
		"\r\n", "\v", "\f", "\u00a0", "\u0085", "\u2028", "\u3000", "\u1680", "'", "'s", "'S", "'t", "'Re", "'lL", "'VE",
		"'m", "'D", "'x", ".", ",", "!", "?", "-", "…", "«", "$", "+", "<", "~", "^", "`", "|", "€", "😀", "\u200d",
		"\x01", "\x1c", "\u0378", "\ue000", "\xff", "\xc3", "/"}
	var b strings.Builder
	for range r.IntN(24) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

// TestBPEQwen2Split checks that the hand-written splitter used for Qwen2's
// pattern cuts text exactly where llama.cpp's std::regex path does.
func TestBPEQwen2Split(t *testing.T) {
	custom := []splitter{llama3Split{digits: 1}}
	reference := []splitter{stdRegexSplit(t, qwen2Pattern)}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		text := randomText(r)
		if got, want := splitWords(custom, text), splitWords(reference, text); !slices.Equal(got, want) {
			t.Fatalf("case %d %q:\n got %q\nwant %q", i, text, got, want)
		}
	}
}

func TestBPEPreSplits(t *testing.T) {
	for _, c := range []struct {
		pre, text string
		want      []string
	}{
		{"gpt-2", "Hello world's  end\n", []string{"Hello", " world", "'s", " ", " end", "\n"}},
		{"llama-bpe", "I'M 12345 ok?!\n\n x", []string{"I", "'M", " ", "123", "45", " ok", "?!\n\n", " x"}},
		{"qwen2", "a12 'S", []string{"a", "1", "2", " '", "S"}},
		{"starcoder", "x123 y", []string{"x", "1", "2", "3", " y"}},
		{"deepseek-coder", "ab12\n", []string{"ab", "1", "2", "\n"}},
	} {
		ss, err := newSplitters(bpePrePatterns(c.pre), false)
		if err != nil {
			t.Fatal(err)
		}
		if got := splitWords(ss, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s %q: got %q, want %q", c.pre, c.text, got, c.want)
		}
	}
}
