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
		{[]string{"--spec-type", "draft-simple"}, "--spec-type draft-simple needs --model-draft FILE"},
		{[]string{"--spec-type", "ngram-simple", "--md", "d.gguf"}, "--model-draft: a draft model needs --spec-type draft-simple"},
		{[]string{"--spec-type", "draft-eagle3"}, "--spec-type: EAGLE-3, MTP and DFlash heads are not supported"},
		{[]string{"--spec-type", "ngram-mod"}, "ngram-mod is not supported"},
		{[]string{"--spec-type", "lookahead"}, "want none, ngram-simple or draft-simple"},
		{[]string{"--draft-p-min", "0.75"}, "--draft-p-min needs a draft model"},
		{[]string{"--md", "d.gguf", "--draft-p-min", "2"}, "--draft-p-min: want a probability in [0, 1]"},
		{[]string{"--draft-max", "4"}, "need --spec-type ngram-simple or --model-draft"},
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
			wantUsage(t, tc.want, args...)
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

// TestDraftModelFlags: --model-draft/-md runs the draft-model proposer
// and gives the text plain decoding gives; a draft model of another
// vocabulary, or a missing file, is a one-line error.
func TestDraftModelFlags(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	prompt := "Once upon a time, there was a little girl named Lily."
	plain, _, code := troupe(t, "run", "-m", stories, "-p", prompt, "-n", "32", "--temp", "0", "--device", "cpu")
	spec, errOut, code2 := troupe(t, "run", "-m", stories, "-p", prompt, "-n", "32", "--temp", "0", "--device", "cpu",
		"-md", stories, "--draft-max", "4", "--draft-p-min", "0.1")
	if code != 0 || code2 != 0 || plain != spec || plain == "" {
		t.Errorf("exit %d and %d (%s); text with a draft model %q, plain %q", code, code2, errOut, spec, plain)
	}
	for _, tc := range []struct{ draft, want string }{
		{testmodels.Path(t, "TinyStories-656K-Q8_0.gguf"), "vocabulary"},
		{"no-such-draft.gguf", "--model-draft"},
	} {
		_, errOut, code := troupe(t, "run", "-m", stories, "-p", prompt, "-n", "4", "--device", "cpu", "--model-draft", tc.draft)
		if code == 0 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("--model-draft %s: exit %d, stderr %q; want an error, one line with %q", tc.draft, code, errOut, tc.want)
		}
	}
}

// TestBenchSpec: `troupe bench spec` prints one row per batch size and
// mode, with drafts accepted on a prompt that quotes itself back.
func TestBenchSpec(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	out := troupeOK(t, "bench", "spec", "-m", stories, "-p", "Once upon a time, there was a little girl named Lily. She loved to play outside.", "-n", "24", "--npl", "1,2")
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| 1 |") || strings.HasPrefix(line, "| 2 |") {
			rows++
		}
	}
	if rows != 4 || !strings.Contains(out, "| 1 | ngram-simple |") {
		t.Errorf("want 4 rows (2 batch sizes, off and on):\n%s", out)
	}
	// With a draft model (the model itself: every draft token accepted),
	// a draft-simple row follows.
	out, errOut, code := troupe(t, "bench", "spec", "-m", stories, "-md", stories, "-p", "Once upon a time", "-n", "16", "--npl", "1", "--draft-max", "4")
	if code != 0 || !strings.Contains(out, "| 1 | draft-simple |") || !strings.Contains(out, "| 100.0% |") {
		t.Errorf("--model-draft: exit %d (%s), want a draft-simple row with 100%% acceptance:\n%s", code, errOut, out)
	}
	// --repeat alternates the modes: off, ngram-simple, off, ngram-simple.
	out, errOut, code = troupe(t, "bench", "spec", "-m", stories, "-p", "Once upon a time", "-n", "8", "--npl", "1", "--repeat", "2")
	if got := strings.Count(out, "| 1 | off |") + strings.Count(out, "| 1 | ngram-simple |"); code != 0 || got != 4 {
		t.Errorf("--repeat 2: exit %d (%s), %d rows, want 4:\n%s", code, errOut, got, out)
	}
	if _, errOut, code := troupe(t, "bench", "spec", "-m", stories); code != 2 || !strings.Contains(errOut, "-p PROMPT") {
		t.Errorf("no prompt: exit %d, %q", code, errOut)
	}
}
