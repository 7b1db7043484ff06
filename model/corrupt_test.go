package model_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// TestCorruptFiles: truncated and bit-flipped copies of the shared models
// either fail to open with an error or open into a model whose forward pass
// runs; nothing panics.
func TestCorruptFiles(t *testing.T) {
	dir := modelsDir(t)
	tmp := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"stories260K.gguf", "TinyStories-656K-Q8_0.gguf", "synthetic/synth-qwen3-tiny256-Q8_0.gguf"} {
		orig, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var variants [][]byte
		for _, frac := range []float64{0, 0.001, 0.01, 0.05, 0.3, 0.5, 0.9, 0.999} {
			variants = append(variants, orig[:int(float64(len(orig))*frac)])
		}
		for range 60 {
			v := append([]byte(nil), orig...)
			// Flip bits in the header (metadata and tensor infos), where a flip
			// changes structure, and once in a while in the tensor data.
			limit := min(len(v), 64<<10)
			if rng.IntN(4) == 0 {
				limit = len(v)
			}
			for range 1 + rng.IntN(3) {
				i := rng.IntN(limit)
				v[i] ^= 1 << rng.IntN(8)
			}
			variants = append(variants, v)
		}
		opened, failed := 0, 0
		for i, v := range variants {
			p := filepath.Join(tmp, "corrupt.gguf")
			if err := os.WriteFile(p, v, 0o644); err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s variant %d: panic: %v", name, i, r)
					}
				}()
				m, err := model.Open(p)
				if err != nil {
					failed++
					return
				}
				defer m.Close()
				opened++
				runShort(t, m)
			}()
		}
		t.Logf("%s: %d variants failed to open with an error, %d opened and ran", name, failed, opened)
		if failed == 0 {
			t.Errorf("%s: no variant was refused; truncation must be", name)
		}
	}
}

// runShort runs a few tokens through m, tolerating errors but not panics.
func runShort(t *testing.T, m *model.Model) {
	c := &m.Config
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: 1})
	if err != nil {
		return
	}
	b := &model.Batch{BlockTables: [][]int32{{0}}}
	ids, err := m.Tokenizer.Encode("Once upon a time", true, true)
	if err != nil {
		return
	}
	for i, id := range ids[:min(len(ids), cache.BlockSize)] {
		b.Add(id, int32(i), 0, true)
	}
	_ = m.Forward(model.NewState(c, 1), b, cache, make([]float32, len(b.Tokens)*c.VocabSize))
}
