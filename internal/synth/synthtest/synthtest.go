// Package synthtest writes the random-weight models benchmarks run on
// (internal/synth's shapes), kept between runs in a cache directory.
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
