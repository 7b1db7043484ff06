package hub

import (
	"errors"
	"strings"
	"testing"
)

func TestParseURI(t *testing.T) {
	good := []struct {
		in   string
		want Ref
		str  string // String(), "" when equal to in
	}{
		{"hf://ggml-org/gemma-3-1b-it-GGUF/gemma-3-1b-it-Q4_K_M.gguf",
			Ref{"ggml-org", "gemma-3-1b-it-GGUF", "gemma-3-1b-it-Q4_K_M.gguf", "main"}, ""},
		{"hf://Qwen/Qwen3-0.6B", Ref{"Qwen", "Qwen3-0.6B", "", "main"}, ""},
		{"hf://Qwen/Qwen3-0.6B/", Ref{"Qwen", "Qwen3-0.6B", "", "main"}, "hf://Qwen/Qwen3-0.6B"},
		{"hf://o/r/sub/dir/m.gguf@v1.0", Ref{"o", "r", "sub/dir/m.gguf", "v1.0"}, ""},
		{"hf://o/r/m.gguf@refs/pr/1", Ref{"o", "r", "m.gguf", "refs/pr/1"}, ""},
		{"hf://o/r@refs%2Fpr%2F1/m.gguf", Ref{"o", "r", "m.gguf", "refs/pr/1"}, "hf://o/r/m.gguf@refs/pr/1"},
		{"hf://o/r@0123456789abcdef0123456789abcdef01234567", Ref{"o", "r", "", "0123456789abcdef0123456789abcdef01234567"}, ""},
		{"hf://o/r/m.gguf@main", Ref{"o", "r", "m.gguf", "main"}, "hf://o/r/m.gguf"},
		{"hf://o/r@dev/name@with-at.gguf", Ref{"o", "r", "name@with-at.gguf", "dev"}, "hf://o/r/name@with-at.gguf@dev"},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseURI(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			str := tc.str
			if str == "" {
				str = tc.in
			}
			if got.String() != str {
				t.Errorf("String() = %q, want %q", got.String(), str)
			}
		})
	}

	bad := []struct{ in, why string }{
		{"", "want hf://"},
		{"https://huggingface.co/o/r", "want hf://"},
		{"hf://", "want hf://"},
		{"hf://owner", "want hf://"},
		{"hf://owner/", "want hf://"},
		{"hf:///repo/file", "want hf://"},
		{"hf://o/r@", "empty revision"},
		{"hf://o/r/m.gguf@", "empty revision"},
		{"hf://o/r/../../etc/passwd", "file path"},
		{"hf://o/r/a//b.gguf", "file path"},
		{"hf://o/r/./b.gguf", "file path"},
		{"hf://o/r/m.gguf@../../x", "revision"},
		{"hf://o/r/m.gguf@/abs", "revision"},
		{"hf://o--x/r/m.gguf", "owner name"},
		{"hf://o/r..x/m.gguf", "repository name"},
		{"hf://o/-r/m.gguf", "repository name"},
		{"hf://o/r r/m.gguf", "repository name"},
		{"hf://datasets/o/r", "only model repositories"},
	}
	for _, tc := range bad {
		t.Run("bad/"+tc.in, func(t *testing.T) {
			_, err := ParseURI(tc.in)
			if !errors.Is(err, ErrBadURI) {
				t.Fatalf("err = %v, want ErrBadURI", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.why) || strings.Contains(msg, "\n") {
				t.Errorf("message %q: want one line mentioning %q", msg, tc.why)
			}
		})
	}
}
