package main

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestRepackFlag: --repack takes auto, all, dense and none on run, serve
// and the benches, --no-repack is none; another value is a usage error;
// bench model says when weights are read in place.
func TestRepackFlag(t *testing.T) {
	tiny := testmodels.Path(t, "synthetic/synth-llama-tiny256-Q4_K_M.gguf")
	for _, tc := range []exitCase{
		{"run bad mode", []string{"run", "-m", tiny, "-p", "x", "--repack", "some"}, 2, `invalid value "some" for flag --repack`},
		{"serve bad mode", []string{"serve", "-m", tiny, "--repack", ""}, 2, "-repack"},
		{"bench model bad mode", []string{"bench", "model", "-m", tiny, "--repack", "experts"}, 2, "want auto, all, dense or none"},
		{"bench batched bad mode", []string{"bench", "batched", "-m", tiny, "--repack", "1"}, 2, "-repack"},
		{"run none", []string{"run", "-m", tiny, "-p", "x", "-n", "2", "--temp", "0", "--device", "cpu", "--repack", "none"}, 0, ""},
		{"bench model no-repack", []string{"bench", "model", "-m", tiny, "-p", "8", "-n", "2", "-r", "1", "--no-repack"}, 0,
			"weights: all read in place from the mapped file (--repack none)"},
		{"bench model dense", []string{"bench", "model", "-m", tiny, "-p", "8", "-n", "2", "-r", "1", "--repack", "dense"}, 0, ""}, // no experts: all
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := troupe(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) || tc.msg == "" && strings.Contains(errOut, "weights:") {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, errOut, tc.code, tc.msg)
			}
		})
	}
}
