package tokenizer

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// tinyByteLevel is a small byte-level tokenizer.json with a pre-tokenizer
// llama.cpp has no name for, merges in the pair format and an id gap.
const tinyByteLevel = `{
  "added_tokens": [
    {"id": 15, "content": "<|bos|>", "special": true},
    {"id": 16, "content": "<think>", "special": false, "rstrip": true},
    {"id": 18, "content": "\u2581x\u2581", "special": false}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "\\p{N}{1,2}| ?\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<|bos|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "ignore_merges": false,
    "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "\u0120": 4, "w": 5, "he": 6, "ll": 7, "hell": 8, "hello": 9,
      "\u0120w": 10, "1": 11, "2": 12, "3": 13, "12": 14},
    "merges": [["h", "e"], ["l", "l"], ["he", "ll"], ["hell", "o"], ["\u0120", "w"], ["1", "2"], ["a b", "c"]]}
}`

const tinyConfig = `{"bos_token": {"content": "<|bos|>"}, "eos_token": null,
  "chat_template": [{"name": "default", "template": "T"}, {"name": "tool_use", "template": "U"}]}`

func TestHFByteLevelUnnamedPre(t *testing.T) {
	v, err := FromHFFiles([]byte(tinyByteLevel), []byte(tinyConfig))
	if err != nil {
		t.Fatal(err)
	}
	if v.Model != "gpt2" || !slices.Equal(v.PreRegexes, []string{`\p{N}{1,2}| ?\p{L}+|\s+`}) {
		t.Errorf("model %q pre %q regexes %q", v.Model, v.Pre, v.PreRegexes)
	}
	if v.Merges[0] != "h e" || v.Merges[6] != "a\u0120b c" {
		t.Errorf("merges %q", v.Merges)
	}
	if v.Tokens[17] != "[PAD17]" || v.Types[17] != TypeUnused || v.Types[15] != TypeControl ||
		v.Types[16] != TypeUserDefined || v.Tokens[18] != " x " || v.Types[0] != TypeNormal {
		t.Errorf("tokens %q types %v", v.Tokens[15:], v.Types)
	}
	if v.Strip == nil || v.Strip[16] != StripRight {
		t.Errorf("strip %v", v.Strip)
	}
	if v.BOS != 15 || !v.AddBOS || v.EOS != -1 || v.AddEOS || v.ChatTemplate != "T" {
		t.Errorf("bos %d add %v eos %d add %v template %q", v.BOS, v.AddBOS, v.EOS, v.AddEOS, v.ChatTemplate)
	}
	tok := mustNew(t, v)
	got, _ := tok.Encode("hello 123<think>", true, false)
	if want := []int32{15, 9, 4, 14, 13, 16}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestHFErrors(t *testing.T) {
	for _, c := range []struct{ name, json string }{
		{"wordpiece", `{"model": {"type": "WordPiece", "vocab": {"a": 0}}}`},
		{"split removed", strings.Replace(tinyByteLevel, `"Isolated"`, `"Removed"`, 1)},
		{"whitespace pre", strings.Replace(tinyByteLevel, `"type": "Split"`, `"type": "Whitespace"`, 1)},
		{"unigram-ish", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`},
		{"negative id", strings.Replace(tinyByteLevel, `"id": 18`, `"id": -3`, 1)},
		{"bad merges", strings.Replace(tinyByteLevel, `["a b", "c"]`, `7`, 1)},
	} {
		if _, err := FromHFFiles([]byte(c.json), nil); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	_, err := FromHFFiles([]byte(`{"model": {"type": "Unigram"}}`), nil)
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("Unigram: %v, want ErrUnsupported", err)
	}
}

// TestHFTinyStoriesNoConfig: without tokenizer_config.json the template still
// asks for BOS, and llama.cpp's SentencePiece defaults give its id.
func TestHFTinyStoriesNoConfig(t *testing.T) {
	data, err := os.ReadFile(testmodels.Path(t, "tinystories-656k-safetensors/tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := FromHFFiles(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Model != "llama" || !v.AddBOS || v.BOS != 1 || v.EOS != 2 || v.UNK != 0 || v.Types[1] != TypeControl {
		t.Errorf("model %q add_bos %v bos %d eos %d unk %d type[1] %d", v.Model, v.AddBOS, v.BOS, v.EOS, v.UNK, v.Types[1])
	}
	tok := mustNew(t, v)
	got, _ := tok.Encode("Once upon a time", true, false)
	if want := []int32{1, 80, 147, 201, 282, 57}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
