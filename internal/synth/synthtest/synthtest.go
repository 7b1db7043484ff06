// Package synthtest writes internal/synth's random-weight models and
// multimodal projectors for tests (into the test's temporary directory) and
// models for benchmarks (kept between runs in a cache directory).
package synthtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model/gguf"
)

// Write writes a model of shape and type (a file type's name) with the
// tokenizer of vocab (a file under the test models) and seed into t's
// temporary directory, as `troupe synth` would, and returns its path.
func Write(t testing.TB, shape, typ, vocab string, seed uint64) string {
	t.Helper()
	s, ok := synth.LookupShape(shape)
	if !ok {
		t.Fatalf("no shape %q", shape)
	}
	return WriteShape(t, s, typ, vocab, seed)
}

// WriteShape is Write for a shape of the test's own, one synth's table
// does not list.
func WriteShape(t testing.TB, s synth.Shape, typ, vocab string, seed uint64) string {
	t.Helper()
	ft, ok := synth.LookupFileType(typ)
	if !ok {
		t.Fatalf("no type %q", typ)
	}
	vf, err := gguf.Open(testmodels.Path(t, vocab))
	if err != nil {
		t.Fatal(err)
	}
	defer vf.Close()
	path := filepath.Join(t.TempDir(), s.Name+"-"+typ+".gguf")
	if _, err := synth.WriteFile(path, synth.Options{Shape: s, Type: ft, Vocab: vf, Seed: seed, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	return path
}

// BenchModel writes (once) a random-weight model of shape and type
// (seed 1) with the Llama SPM vocabulary into $TROUPE_BENCH_MODELS
// (default the user cache's troupe-bench, where `make bench-compare`
// keeps its models too) and returns its path.
func BenchModel(b testing.TB, shape, typ string) string {
	b.Helper()
	dir := os.Getenv("TROUPE_BENCH_MODELS")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			b.Fatal(err)
		}
		dir = filepath.Join(cache, "troupe-bench")
	}
	path := filepath.Join(dir, shape+"-"+typ+".gguf")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	s, ok := synth.LookupShape(shape)
	ft, ok2 := synth.LookupFileType(typ)
	if !ok || !ok2 {
		b.Fatalf("synth: no shape %s or type %s", shape, typ)
	}
	vocab, err := gguf.Open(testmodels.Path(b, "vocab/ggml-vocab-llama-spm.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	defer vocab.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	tmp, err := os.CreateTemp(dir, shape+"-*.tmp")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		b.Fatal(err)
	}
	if _, err := synth.Write(tmp, synth.Options{Shape: s, Type: ft, Vocab: vocab, Seed: 1, Workers: runtime.GOMAXPROCS(0)}); err != nil {
		tmp.Close()
		b.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		b.Fatal(err)
	}
	return path
}
