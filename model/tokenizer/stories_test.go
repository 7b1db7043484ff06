package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestStoriesPrompts checks the prompt ids llama.cpp produced for the
// reference runs in ../shared/reference (Encode with special tokens).
func TestStoriesPrompts(t *testing.T) {
	for _, model := range []string{"stories260K", "TinyStories-656K-Q8_0"} {
		t.Run(model, func(t *testing.T) {
			tok := loadTokenizer(t, model+".gguf")
			refDir := filepath.Join(testmodels.Dir(t), "..", "reference", model)
			cases, err := filepath.Glob(filepath.Join(refDir, "case*.json"))
			if err != nil || len(cases) == 0 {
				t.Fatalf("no reference cases in %s (%v)", refDir, err)
			}
			for _, path := range cases {
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var ref struct {
					Prompt    string  `json:"prompt"`
					PromptIDs []int32 `json:"prompt_ids"`
				}
				if err := json.Unmarshal(raw, &ref); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				got, _ := tok.Encode(ref.Prompt, true, false)
				if !slices.Equal(got, ref.PromptIDs) {
					t.Errorf("%s: Encode(%q) = %v, want %v", filepath.Base(path), ref.Prompt, got, ref.PromptIDs)
				}
			}
		})
	}
}

// TestStoriesEncode pins a few encodings of the two story models, including
// TinyStories-656K text that llama.cpp cannot tokenize (it has no byte
// tokens): characters without a token become UNK.
func TestStoriesEncode(t *testing.T) {
	stories := loadTokenizer(t, "stories260K.gguf")
	tiny := loadTokenizer(t, "TinyStories-656K-Q8_0.gguf")
	for _, tc := range []struct {
		name string
		tok  *Tokenizer
		text string
		want []int32
	}{
		{"stories260K", stories, "Once upon a time", []int32{1, 403, 407, 261, 378}},
		{"tiny", tiny, "Once upon a time", []int32{1, 80, 147, 201, 282, 57}},
		{"tiny two sentences", tiny, "Lily and Tom went to the park. They", []int32{1, 80, 669, 388, 1140, 66, 364, 93, 455, 746, 1143}},
		{"tiny emoji", tiny, "Hi 🦙", []int32{1, 80, 1158, 80, 0}},                // ▁ Hi ▁ <unk>
		{"tiny tab and angle bracket", tiny, "a\t<b", []int32{1, 85, 0, 23, 54}}, // ▁a <unk> < b
		{"tiny accented", tiny, "é", []int32{1, 80, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tok.Encode(tc.text, true, false)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

// TestTinyStoriesUnrepresentable feeds TinyStories-656K text llama.cpp
// aborts on; every character without a token must become exactly one UNK,
// and invalid UTF-8 must not break it.
func TestTinyStoriesUnrepresentable(t *testing.T) {
	tok := loadTokenizer(t, "TinyStories-656K-Q8_0.gguf")
	for _, text := range []string{"line one\nline two", "tab\there", "<html>", "emoji 🦙🚀 here", "Führer", "\x00", "<|start_story|>", "日本語"} {
		ids, err := tok.Encode(text, false, false)
		if err != nil {
			t.Fatalf("Encode(%q): %v", text, err)
		}
		unks := 0
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("Encode(%q) gave id %d", text, id)
			}
			if id == tok.UNK() {
				unks++
			}
		}
		want := 0
		for _, r := range text {
			if _, ok := tok.TokenID(string(r)); !ok && r != ' ' {
				want++
			}
		}
		if unks != want {
			t.Errorf("Encode(%q) = %v: %d UNKs, want %d (one per character without a token)", text, ids, unks, want)
		}
	}
	// Invalid UTF-8 is split as llama.cpp splits it, by lead byte:
	// "\xff\xfe\x80" is one symbol (a 4-byte lead cut short), so one UNK.
	if ids, _ := tok.Encode("a\xff\xfe\x80", false, false); !slices.Equal(ids, []int32{85, 0}) {
		t.Errorf("Encode(invalid UTF-8) = %v, want [85 0]", ids)
	}
}

func TestSpecialTokens(t *testing.T) {
	for _, tc := range []struct {
		rel                string
		bos, eos, unk, eot int32
		eog                []int32
	}{
		{"stories260K.gguf", 1, 2, 0, -1, []int32{2}},
		{"TinyStories-656K-Q8_0.gguf", 1, 2, 0, -1, []int32{2}},
		{"vocab/ggml-vocab-llama-spm.gguf", 1, 2, 0, -1, []int32{2}},
		// <|endoftext|> and <|end|> both qualify as EOT; the lowest id wins.
		{"vocab/ggml-vocab-phi-3.gguf", 1, 32000, 0, 32000, []int32{2, 32000, 32007}},
		{"vocab/ggml-vocab-bert-bge.gguf", 101, -1, 100, -1, []int32{0}}, // [PAD] is a FIM pad text
	} {
		t.Run(tc.rel, func(t *testing.T) {
			tok := loadTokenizer(t, tc.rel)
			v := tok.Vocab()
			if v.BOS != tc.bos || v.EOS != tc.eos || v.UNK != tc.unk || v.EOT != tc.eot {
				t.Errorf("BOS, EOS, UNK, EOT = %d %d %d %d, want %d %d %d %d", v.BOS, v.EOS, v.UNK, v.EOT, tc.bos, tc.eos, tc.unk, tc.eot)
			}
			if !slices.Equal(v.EOG, tc.eog) {
				t.Errorf("EOG = %v, want %v", v.EOG, tc.eog)
			}
			for _, id := range tc.eog {
				if !tok.IsEOG(id) {
					t.Errorf("IsEOG(%d) = false", id)
				}
			}
			if tok.IsEOG(tc.bos) {
				t.Errorf("IsEOG(BOS) = true")
			}
		})
	}
}
