package tokenizer

import (
	"slices"
	"testing"
)

// TestHarmonySpecialTokens: on an o200k_harmony vocabulary (gpt-oss's),
// as llama.cpp's load leaves it: <|return|> and <|call|> end the
// generation (the server never sees their text), <|end|> does not (it ends
// one message of several) and, with <|channel|>, <|message|>, <|start|>
// and <|constrain|>, is always rendered as text, which the harmony parser
// reads.
func TestHarmonySpecialTokens(t *testing.T) {
	tokens := []string{"a", "b", "<|startoftext|>", "<|endoftext|>", "<|return|>", "<|constrain|>", "<|channel|>",
		"<|start|>", "<|end|>", "<|message|>", "<|call|>", "<|reserved_200013|>"}
	v := &Vocab{Model: "gpt2", Tokens: tokens, BOS: 2, EOS: 4, EOT: -1, EOM: -1, UNK: -1, PAD: -1, SEP: -1, MASK: -1, NL: -1}
	v.Types = make([]TokenType, len(tokens))
	for i := 2; i < len(tokens); i++ {
		v.Types[i] = TypeControl
	}
	detectSpecialTokens(noMetadata{}, v)
	id := func(s string) int32 { return int32(slices.Index(tokens, s)) }
	want := []int32{id("<|endoftext|>"), id("<|return|>"), id("<|call|>")}
	slices.Sort(want)
	if !slices.Equal(v.EOG, want) {
		var got []string
		for _, e := range v.EOG {
			got = append(got, tokens[e])
		}
		t.Errorf("EOG %v, want <|endoftext|> <|return|> <|call|>", got)
	}
	for _, s := range []string{"<|end|>", "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if v.Types[id(s)] != TypeUserDefined {
			t.Errorf("%s: type %v, want user-defined (always rendered)", s, v.Types[id(s)])
		}
	}
	for _, s := range []string{"<|return|>", "<|call|>"} {
		if v.Types[id(s)] != TypeControl {
			t.Errorf("%s: type %v, want control", s, v.Types[id(s)])
		}
	}
}
