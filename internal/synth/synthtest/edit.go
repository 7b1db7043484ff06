package synthtest

import (
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model/gguf"
)

// Edit writes a copy of the shared model rel (a path under the test models)
// into t's temporary directory as name, each metadata value passed through
// edit (which returns it, or the value to write instead), the tensors as
// they are, and returns its path.
func Edit(t testing.TB, rel, name string, edit func(key string, v any) any) string {
	t.Helper()
	src, err := gguf.Open(testmodels.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	w := gguf.NewWriterFrom(src)
	for _, k := range src.Keys() { // SetKV replaces a value in place
		v, _ := src.Value(k)
		w.SetKV(k, edit(k, v))
	}
	path := filepath.Join(t.TempDir(), name)
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}
