package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/model/vision"
)

// TestSynthProjector: troupe synth --projector writes an mmproj file that
// model/vision opens, of the asked output width; bad flags exit 2.
func TestSynthProjector(t *testing.T) {
	out := filepath.Join(t.TempDir(), "mmproj.gguf")
	stdout := troupeOK(t, "synth", "--projector", "idefics3-tiny", "--text-dim", "96", "-o", out)
	if !strings.Contains(stdout, "idefics3-tiny") {
		t.Errorf("stdout %q", stdout)
	}
	p, err := vision.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Type() != "idefics3" || p.Check(96) != nil {
		t.Fatalf("type %q, dim %d; want idefics3, 96", p.Type(), p.Dim())
	}
	for _, args := range [][]string{
		{"synth", "--projector", "llava", "-o", out},
		{"synth", "--projector", "gemma3-tiny"},
		{"synth", "--projector", "gemma3-tiny", "--text-dim", "-1", "-o", out},
	} {
		wantUsage(t, "-", args...)
	}
}
