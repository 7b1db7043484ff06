package tokenizer

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model/gguf"
)

// loadTokenizer builds the Tokenizer of a GGUF file under the models dir.
func loadTokenizer(t testing.TB, rel string) *Tokenizer {
	t.Helper()
	return mustNew(t, vocabFromFile(t, testmodels.Path(t, rel)))
}

// vocabFromFile reads the Vocab of the GGUF file at path.
func vocabFromFile(t testing.TB, path string) *Vocab {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// mustNew is New(v), failing t on an error.
func mustNew(t testing.TB, v *Vocab) *Tokenizer {
	t.Helper()
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// vector is one llama.cpp tokenizer test case.
type vector struct {
	text string
	ids  []int32
}

// readVectors reads rel.inp and rel.out as llama.cpp's test-tokenizer-0
// does: cases separated by "\n__ggml_vocab_test__\n" (a separator at the very
// end starts no case), one line of ids per case.
func readVectors(t testing.TB, rel string) []vector {
	t.Helper()
	inp, err := os.ReadFile(testmodels.Path(t, rel+".inp"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(testmodels.Path(t, rel+".out"))
	if err != nil {
		t.Fatal(err)
	}
	return parseVectors(t, rel, splitCases(string(inp)), out)
}

// splitCases cuts an .inp file into its cases.
func splitCases(inp string) []string {
	const sep = "\n__ggml_vocab_test__\n"
	var texts []string
	for s := inp; s != ""; {
		i := strings.Index(s, sep)
		if i < 0 {
			texts = append(texts, s)
			break
		}
		texts = append(texts, s[:i])
		s = s[i+len(sep):]
	}
	return texts
}

// parseVectors pairs texts with out's lines of ids.
func parseVectors(t testing.TB, name string, texts []string, out []byte) []vector {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d cases but %d lines of ids", name, len(texts), len(lines))
	}
	vs := make([]vector, len(texts))
	for i, text := range texts {
		vs[i].text = text
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", name, i+1, err)
			}
			vs[i].ids = append(vs[i].ids, int32(id))
		}
	}
	return vs
}

// TestVocabVectors checks llama.cpp's tokenizer vectors for the SentencePiece
// and WordPiece vocabularies (add_special=false, parse_special=false), and
// that decoding gives the text back where the tokenizer keeps everything.
func TestVocabVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		// roundTrip: Decode(Encode(x)) == x for every case. WordPiece
		// lowercases, drops accents and spacing, and maps unknown words to
		// [UNK], so it cannot round-trip.
		roundTrip bool
	}{
		{"llama-spm", true},
		{"phi-3", true},
		{"bert-bge", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := "vocab/ggml-vocab-" + tc.name + ".gguf"
			tok := loadTokenizer(t, rel)
			vs := readVectors(t, rel)
			pass, trips := 0, 0
			for i, v := range vs {
				got, err := tok.Encode(v.text, false, false)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, v.ids) {
					t.Errorf("case %d %q:\n got %v\nwant %v", i, v.text, got, v.ids)
				} else {
					pass++
				}
				if back := tok.Decode(v.ids); back == v.text {
					trips++
				} else if tc.roundTrip {
					t.Errorf("case %d: Decode(ids) = %q, want %q", i, back, v.text)
				}
			}
			t.Logf("%s: %d/%d cases encode as llama.cpp; %d/%d decode back to the input", tc.name, pass, len(vs), trips, len(vs))
			if len(vs) < 40 {
				t.Fatalf("only %d cases read", len(vs))
			}
		})
	}
}

// TestWPMDecode pins what WordPiece decoding gives: the word-start marks
// become spaces, continuations join, and clean-up removes the space before
// punctuation (llama.cpp keeps the leading space: bert adds no space prefix).
func TestWPMDecode(t *testing.T) {
	tok := loadTokenizer(t, "vocab/ggml-vocab-bert-bge.gguf")
	for _, tc := range []struct{ in, want string }{
		{"Hello, world!", " hello, world!"},
		{"ied 4 ½ months", " ied 4 ½ months"},
		{"Führer", " fuhrer"},
	} {
		ids, _ := tok.Encode(tc.in, false, false)
		if got := tok.Decode(ids); got != tc.want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", tc.in, got, tc.want)
		}
	}
	ids, _ := tok.Encode("Hello world", true, false)
	if want := []int32{101, 7592, 2088, 102}; !slices.Equal(ids, want) {
		t.Errorf("Encode with special tokens = %v, want %v ([CLS] ... [SEP])", ids, want)
	}
}
