package synthtest

import (
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/model/vision"
)

// ProjectorFile writes a random projector of shape (a name in synth's
// projector table) for a text model of width textDim, with seed, to path,
// as `troupe synth --projector` would, and returns path.
func ProjectorFile(t testing.TB, path, shape string, textDim int, seed uint64) string {
	t.Helper()
	s, ok := synth.LookupProjectorShape(shape)
	if !ok {
		t.Fatalf("no projector shape %q", shape)
	}
	if err := synth.WriteProjector(path, synth.ProjectorOptions{Shape: s, TextDim: textDim, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return path
}

// Projector writes ProjectorFile's projector into t's temporary directory
// and opens it, closed with t.
func Projector(t testing.TB, shape string, textDim int, seed uint64) *vision.Projector {
	t.Helper()
	p, err := vision.Open(ProjectorFile(t, filepath.Join(t.TempDir(), shape+"-mmproj.gguf"), shape, textDim, seed))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
