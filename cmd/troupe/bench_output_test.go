package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestBenchOutputFlag: every bench subcommand takes -o and --output (text
// or json); bench model shows the parameters of a small model; an error
// of package bench says "bench:" once.
func TestBenchOutputFlag(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	url := fakeOpenAI(t, false)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"model", []string{"bench", "model", "-m", stories, "-p", "8", "-n", "4", "-r", "1"}},
		{"batched", []string{"bench", "batched", "-m", stories, "-npp", "8", "-ntg", "4", "-npl", "1"}},
		{"serve", []string{"bench", "serve", "--url", url, "--num-prompts", "2", "--input-len", "2", "--output-len", "2"}},
	} {
		for _, flag := range []string{"-o", "--output"} {
			out, errOut, code := troupe(t, append(tc.args, flag, "json")...)
			if code != 0 {
				t.Fatalf("%s %s json: exit %d: %s", tc.name, flag, code, errOut)
			}
			var v any
			if err := json.NewDecoder(strings.NewReader(out)).Decode(&v); err != nil {
				t.Errorf("%s %s json: not JSON: %v\n%s", tc.name, flag, err, out)
			}
			_, errOut, code = troupe(t, append(tc.args, flag, "xml")...)
			if code != 2 || !strings.Contains(errOut, `--output "xml"`) {
				t.Errorf("%s %s xml: exit %d, %q", tc.name, flag, code, errOut)
			}
		}
	}
	out, errOut, code := troupe(t, "bench", "model", "-m", stories, "-p", "8", "-n", "0", "-r", "1", "-o", "text")
	if code != 0 || !strings.Contains(out, "|     0.29 M |") {
		t.Errorf("bench model: exit %d, %s\n%s; want 0.29 M parameters", code, errOut, out)
	}
	if got, want := paramCount(1_100_048_384), "1.10 B"; got != want {
		t.Errorf("paramCount: %q, want %q", got, want)
	}
	_, errOut, code = troupe(t, "bench", "serve", "--url", "http://127.0.0.1:1", "--num-prompts", "1", "-o", "json")
	if code != 1 || strings.Count(errOut, "bench:") != 1 || !strings.HasPrefix(errOut, "troupe bench: ") {
		t.Errorf("bench serve error: exit %d, %q; want \"bench:\" once", code, errOut)
	}
}
