package synthtest

import (
	"os"
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
	w := gguf.NewWriter(src.Version)
	for _, k := range src.Keys() {
		v, _ := src.Value(k)
		w.SetKV(k, edit(k, v))
	}
	for _, ti := range src.Tensors() {
		tn, err := src.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape, tn.Data); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
