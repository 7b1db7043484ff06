package model_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// TestBatchEmbeds checks input-embedding rows (Batch.Embeds, an image's
// rows): a sequence whose rows 4..11 are given embeddings has the same
// logits, bit for bit, prefilled whole alone, in chunks that cut the image,
// and beside a text sequence in the same batches; and the embeddings are
// used (the logits differ from the placeholder tokens').
func TestBatchEmbeds(t *testing.T) {
	m := openModel(t, testmodels.Path(t, "stories260K.gguf"))
	c := &m.Config
	const n, blockSize = 20, 8
	rng := rand.New(rand.NewPCG(3, 4))
	ids := randomTokens(rng, n, c.VocabSize)
	other := randomTokens(rng, n, c.VocabSize)
	embeds := make([][]float32, n)
	for i := 4; i < 12; i++ {
		ids[i] = 0 // a placeholder id
		embeds[i] = make([]float32, c.Dim)
		for j := range embeds[i] {
			embeds[i][j] = float32(rng.NormFloat64() * 0.1)
		}
	}
	st := model.NewState(c, 2)
	// run feeds the sequences chunk tokens at a time, sequence A (with
	// embeds when withEmbeds) in table 0 and, when mixed, B in table 1;
	// it returns A's logits, (n, vocab).
	run := func(chunk int, mixed, withEmbeds bool) []float32 {
		cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: 8, BlockSize: blockSize})
		if err != nil {
			t.Fatal(err)
		}
		tables := [][]int32{{0, 1, 2}, {4, 5, 6}}
		out := make([]float32, 0, n*c.VocabSize)
		for start := 0; start < n; start += chunk {
			end := min(start+chunk, n)
			b := &model.Batch{BlockTables: tables}
			for p := start; p < end; p++ {
				if mixed { // B's token first, so A's rows sit elsewhere in the batch
					b.Add(other[p], int32(p), 1, false)
					b.Embeds = append(b.Embeds, nil)
				}
				b.Add(ids[p], int32(p), 0, true)
				if withEmbeds {
					b.Embeds = append(b.Embeds, embeds[p])
				} else {
					b.Embeds = append(b.Embeds, nil)
				}
			}
			logits := make([]float32, b.NumLogits()*c.VocabSize)
			if err := m.Forward(st, b, cache, logits); err != nil {
				t.Fatal(err)
			}
			out = append(out, logits...)
		}
		return out
	}
	alone := run(n, false, true)
	for _, tc := range []struct {
		name  string
		chunk int
		mixed bool
	}{{"chunk3", 3, false}, {"chunk5-mixed", 5, true}, {"whole-mixed", n, true}, {"decode-mixed", 1, true}} {
		if got := run(tc.chunk, tc.mixed, true); !slices.Equal(got, alone) {
			t.Errorf("%s: logits differ from the sequence prefilled alone", tc.name)
		}
	}
	plain := run(n, false, false)
	v := c.VocabSize
	if !slices.Equal(plain[:4*v], alone[:4*v]) {
		t.Errorf("rows before the image differ")
	}
	if slices.Equal(plain[4*v:5*v], alone[4*v:5*v]) {
		t.Errorf("the first image row's logits equal the placeholder token's: embeddings not used")
	}

	// Validate: a wrong width or count is an error, not a panic.
	cache, _ := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: 8, BlockSize: blockSize})
	b := &model.Batch{BlockTables: [][]int32{{0}}}
	b.Add(1, 0, 0, true)
	b.Embeds = [][]float32{make([]float32, c.Dim-1)}
	if err := m.Forward(st, b, cache, make([]float32, v)); err == nil {
		t.Errorf("an embedding of the wrong width was accepted")
	}
	b.Embeds = [][]float32{nil, nil}
	if err := m.Forward(st, b, cache, make([]float32, v)); err == nil {
		t.Errorf("a batch with more embeddings than tokens was accepted")
	}
}
