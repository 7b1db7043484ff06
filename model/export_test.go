package model

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/model/gguf"
)

// GELU is gelu, for the tests of package model_test.
var GELU = gelu

// WriteTempGGUF writes w into a file in t's temporary directory and returns
// its path (for the tests of both packages).
func WriteTempGGUF(t testing.TB, w *gguf.Writer) string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
