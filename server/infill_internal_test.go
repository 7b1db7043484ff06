package server

import (
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/actors"
)

// TestFIMPrompt checks the token sequences fimPrompt builds against
// llama-server's format_prompt_infill, worked through by hand, with an
// encoder that gives each byte its value + 1000 (and "<S>" as token 7 when
// special tokens are parsed).
func TestFIMPrompt(t *testing.T) {
	enc := func(text string, parseSpecial bool) ([]int32, error) {
		var ids []int32
		for i := 0; i < len(text); i++ {
			if parseSpecial && text[i:] >= "<S>" && len(text[i:]) >= 3 && text[i:i+3] == "<S>" {
				ids = append(ids, 7)
				i += 2
				continue
			}
			ids = append(ids, 1000+int32(text[i]))
		}
		return ids, nil
	}
	b := func(s string) []int32 { ids, _ := enc(s, false); return ids }
	cat := func(parts ...[]int32) []int32 { return slices.Concat(parts...) }
	one := func(id int32) []int32 { return []int32{id} }
	str := func(s string) *string { return &s }
	qwen := actors.FIMTokens{Pre: 1, Suf: 2, Mid: 3, Pad: 4, Rep: 5, Sep: 6, Set: true}
	plain := actors.FIMTokens{Pre: 1, Suf: 2, Mid: 3, Pad: -1, Rep: -1, Sep: -1, Set: true}
	extra := []infillChunk{{Filename: str("a.go"), Text: str("X")}, {Text: str("Y")}}
	tests := []struct {
		name string
		fim  actors.FIMTokens
		bos  int32
		nCtx int
		in   infillInput
		want []int32
	}{
		{"prefix suffix middle", plain, -1, 4096, infillInput{prefix: "ab", suffix: "c"},
			cat(one(1), b("ab"), one(2), b("c"), one(3))},
		{"bos and prompt (special parsed)", plain, 9, 4096, infillInput{prefix: "ab", suffix: "c", prompt: "d<S>"},
			cat(one(9), one(1), b("ab"), b("d"), one(7), one(2), b("c"), one(3))},
		{"repo-level", qwen, -1, 4096, infillInput{prefix: "p", suffix: "s", extra: extra},
			cat(one(5), b("myproject\n"), one(6), b("a.go\n"), b("X"), one(6), b("tmp\n"), b("Y"), one(6), b("filename\n"),
				one(1), b("p"), one(2), b("s"), one(3))},
		{"snippets without FIM_SEP", plain, 9, 4096, infillInput{prefix: "p", suffix: "s", extra: extra},
			cat(b("\n\n--- snippet ---\n\n"), b("X"), b("\n\n--- snippet ---\n\n"), b("Y"), one(9), one(1), b("p"), one(2), b("s"), one(3))},
		// A context of 2048 + 2 leaves room for the last 4 extra tokens only
		// (n_ctx - n_batch - 2*n_predict = 4).
		{"extra cut to the context", qwen, -1, 2048 + 2, infillInput{prefix: "p", suffix: "s", extra: extra}, nil}, // set below
	}
	// The last case's extra is the last 4 tokens of the full extra.
	full := cat(one(5), b("myproject\n"), one(6), b("a.go\n"), b("X"), one(6), b("tmp\n"), b("Y"), one(6), b("filename\n"))
	tests[len(tests)-1].want = cat(full[len(full)-4:], one(1), b("p"), one(2), b("s"), one(3))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fimPrompt(tt.fim, tt.bos, tt.nCtx, enc, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
	// The prefix keeps its last 1536 tokens, the suffix its first 512 - 2 - len(prompt).
	long := make([]byte, 3000)
	for i := range long {
		long[i] = 'a' + byte(i%26)
	}
	got, _ := fimPrompt(plain, -1, 8192, enc, infillInput{prefix: string(long), suffix: string(long), prompt: "xyz"})
	want := cat(one(1), b(string(long[3000-1536:])), b("xyz"), one(2), b(string(long[:512-2-3])), one(3))
	if !slices.Equal(got, want) {
		t.Errorf("long: %d tokens, want %d", len(got), len(want))
	}
	if infillUnsupported(plain) != "" || infillUnsupported(actors.FIMTokens{Pre: 1, Suf: -1, Mid: -1, Set: true}) == "" {
		t.Error("infillUnsupported")
	}
}
