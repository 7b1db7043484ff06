package main

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestSpecFlags: the speculative-decoding flags troupe cannot honour are
// one-line usage errors (exit 2) naming them; ngram-simple runs and gives
// the text plain decoding gives.
func TestSpecFlags(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--model-draft", "d.gguf"}, "--model-draft: a draft model is not supported"},
		{[]string{"--md", "d.gguf"}, "--md: a draft model is not supported"},
		{[]string{"--spec-type", "draft-eagle3"}, "--spec-type: a draft model is not supported"},
		{[]string{"--spec-type", "ngram-mod"}, "ngram-mod is not supported"},
		{[]string{"--spec-type", "lookahead"}, "want none or ngram-simple"},
		{[]string{"--draft-p-min", "0.75"}, "--draft-p-min: a draft model"},
		{[]string{"--draft-max", "4"}, "need --spec-type ngram-simple"},
		{[]string{"--spec-type", "ngram-simple", "--draft-max", "65"}, "--draft-max 65 is outside [0, 64]"},
		{[]string{"--spec-type", "ngram-simple", "--draft-max", "2", "--draft-min", "3"}, "--draft-min 3 is more than --draft-max 2"},
		{[]string{"--speculative-config", `{"method":"eagle3"}`}, `method "eagle3" is not supported`},
		{[]string{"--speculative-config", `{"method":"ngram","model":"x"}`}, `unknown field "model"`},
	}
	for _, cmd := range []string{"run", "serve"} {
		for _, tc := range bad {
			args := append([]string{cmd, "-m", stories, "-p", "x"}, tc.args...)
			if cmd == "serve" {
				args = append([]string{cmd, "-m", stories}, tc.args...)
			}
			_, errOut, code := troupe(t, args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("%s %v: exit %d, stderr %q; want 2 and one line with %q", cmd, tc.args, code, errOut, tc.want)
			}
		}
	}
	prompt := "Once upon a time, there was a little girl named Lily. She loved to play outside. Once upon a time, there was a little girl named Lily. She"
	plain, _, code := troupe(t, "run", "-m", stories, "-p", prompt, "-n", "48", "--temp", "0", "--device", "cpu")
	spec, errOut, code2 := troupe(t, "run", "-m", stories, "-p", prompt, "-n", "48", "--temp", "0", "--device", "cpu",
		"--spec-type", "ngram-simple", "--draft-max", "6")
	if code != 0 || code2 != 0 || plain != spec || plain == "" {
		t.Errorf("exit %d and %d (%s); speculative text %q, plain %q", code, code2, errOut, spec, plain)
	}
}

// TestBenchSpec: `troupe bench spec` prints one row per batch size and
// mode, with drafts accepted on a prompt that quotes itself back.
func TestBenchSpec(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	out, errOut, code := troupe(t, "bench", "spec", "-m", stories, "-p", "Once upon a time, there was a little girl named Lily. She loved to play outside.", "-n", "24", "--npl", "1,2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| 1 |") || strings.HasPrefix(line, "| 2 |") {
			rows++
		}
	}
	if rows != 4 || !strings.Contains(out, "| 1 | ngram-simple |") {
		t.Errorf("want 4 rows (2 batch sizes, off and on):\n%s", out)
	}
	if _, errOut, code := troupe(t, "bench", "spec", "-m", stories); code != 2 || !strings.Contains(errOut, "-p PROMPT") {
		t.Errorf("no prompt: exit %d, %q", code, errOut)
	}
}
