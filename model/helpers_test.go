package model_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/gguf"
)

// refCase is one ../shared/reference/<model>/caseN.json.
type refCase = testmodels.Case

func modelsDir(t testing.TB) string { return testmodels.Dir(t) }

func loadCases(t testing.TB, name string) []*refCase { return testmodels.Cases(t, name) }

// openModel loads the model at path (a safetensors directory or a GGUF
// file), closed when the test ends.
func openModel(t testing.TB, path string) *model.Model {
	t.Helper()
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		m, _ := openGGUF(t, path)
		return m
	}
	m, _, err := model.LoadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// openGGUF loads the GGUF model at path, closed when the test ends, and
// returns it with the file it was read from.
func openGGUF(t testing.TB, path string) (*model.Model, *gguf.File) {
	t.Helper()
	m, f, err := model.LoadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, f
}

// seqCache returns a cache of type typ for c's model with just enough
// blocks for one sequence of n positions, and that sequence's block table.
func seqCache(t testing.TB, c *model.Config, n int, typ kv.CacheType) (*kv.Cache, []int32) {
	t.Helper()
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: (n + 15) / 16, Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	table, err := kv.NewPool(cache.NumBlocks).Grow(nil, n, cache.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	return cache, table
}

// forEachRef runs run as a subtest on each reference
// testdata/<dir>/*.json (scripts/<script> makes them), read into a T.
func forEachRef[T any](t *testing.T, dir, script string, run func(t *testing.T, ref *T)) {
	files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if len(files) == 0 {
		t.Fatalf("no references in testdata/%s (scripts/%s makes them)", dir, script)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var ref T
			if err := json.Unmarshal(raw, &ref); err != nil {
				t.Fatal(err)
			}
			run(t, &ref)
		})
	}
}

// readF32 reads a file of little-endian float32s.
func readF32(t *testing.T, path string) []float32 { return readLE[float32](t, path) }

// readI32 reads a file of little-endian int32s.
func readI32(t *testing.T, path string) []int32 { return readLE[int32](t, path) }

// readLE reads a file of little-endian 4-byte values (a partial last one
// left out).
func readLE[T int32 | float32](t *testing.T, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]T, len(b)/4)
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, out); err != nil {
		t.Fatal(err)
	}
	return out
}
