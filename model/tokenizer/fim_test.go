package tokenizer

import (
	"testing"

	"github.com/troupe-llm/troupe/model/gguf"
)

// fimVocab writes a SentencePiece vocabulary of tokens with the given keys
// and reads it back.
func fimVocab(t *testing.T, tokens []string, keys map[string]uint32) *Vocab {
	t.Helper()
	w := gguf.NewWriter(3)
	w.SetKV("tokenizer.ggml.model", "llama")
	w.SetKV("tokenizer.ggml.tokens", tokens)
	w.SetKV("tokenizer.ggml.scores", make([]float32, len(tokens)))
	for k, v := range keys {
		w.SetKV(k, v)
	}
	f, err := w.Parse("fim.gguf")
	if err != nil {
		t.Fatal(err)
	}
	v, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFIMTokens checks the FIM tokens as llama.cpp's vocabulary load finds
// them: keys first (fim_* over the older prefix/suffix/middle ones), then by
// text, for each token the keys do not name.
func TestFIMTokens(t *testing.T) {
	base := []string{"<unk>", "<s>", "</s>", "a", "b", "c", "d", "e"}
	tests := []struct {
		name   string
		tokens []string
		keys   map[string]uint32
		want   FIMTokens
		infill bool
	}{
		{"none", base, nil, FIMTokens{-1, -1, -1, -1, -1, -1, true}, false},
		{"qwen texts", append(base[:3:3], "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"), nil,
			FIMTokens{3, 5, 4, 6, 7, 8, true}, true},
		{"codellama texts", append(base[:3:3], "▁<PRE>", "▁<SUF>", "▁<MID>", "<EOT>"), nil, FIMTokens{3, 4, 5, -1, -1, -1, true}, true},
		{"keys", base, map[string]uint32{"tokenizer.ggml.fim_pre_token_id": 5, "tokenizer.ggml.fim_suf_token_id": 6,
			"tokenizer.ggml.fim_mid_token_id": 7, "tokenizer.ggml.fim_sep_token_id": 3}, FIMTokens{5, 6, 7, -1, -1, 3, true}, true},
		{"older keys", base, map[string]uint32{"tokenizer.ggml.prefix_token_id": 3, "tokenizer.ggml.suffix_token_id": 4,
			"tokenizer.ggml.middle_token_id": 5}, FIMTokens{3, 4, 5, -1, -1, -1, true}, true},
		{"key outside the vocabulary", base, map[string]uint32{"tokenizer.ggml.fim_pre_token_id": 99}, FIMTokens{-1, -1, -1, -1, -1, -1, true}, false},
		{"prefix only", append(base[:3:3], "<fim-prefix>"), nil, FIMTokens{3, -1, -1, -1, -1, -1, true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := fimVocab(t, tt.tokens, tt.keys)
			if v.FIM != tt.want || v.FIM.Infill() != tt.infill {
				t.Errorf("FIM %+v (infill %v), want %+v (%v)", v.FIM, v.FIM.Infill(), tt.want, tt.infill)
			}
			for _, id := range []int32{v.FIM.Pre, v.FIM.Suf, v.FIM.Mid} {
				if id >= 0 && tt.keys == nil && v.Types[id] != TypeControl {
					t.Errorf("token %d (%q) found by text is not a control token", id, v.Tokens[id])
				}
			}
		})
	}
	if (FIMTokens{}).Infill() {
		t.Error("the zero FIMTokens can infill")
	}
}
