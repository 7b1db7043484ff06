// Package reftest runs a forward pass the way llama.cpp made the reference
// logits in ../shared/reference, for the tests of every device (model's
// CPU pass, gpu's). It is apart from internal/testmodels because it
// imports model, which model's own packages' tests cannot. Open opens a
// model for a test; EmbedInputs reads llama-embedding's references and
// Cosine compares embeddings with them.
package reftest

import (
	"math"
	"testing"

	"github.com/troupe-llm/troupe/model"
)

// Forward is one device's forward pass: model.Model.Forward over a cache,
// or gpu's.
type Forward func(b *model.Batch, logits []float32) error

// TeacherForced runs ids as one sequence on the blocks of table: the first
// promptLen tokens as one batch, then one token a step, as llama.cpp made
// the reference. It returns the logits of every row but the last token's,
// (len(ids)-1, vocab).
func TeacherForced(t testing.TB, forward Forward, vocab, promptLen int, ids, table []int32) []float32 {
	t.Helper()
	out := make([]float32, 0, len(ids)*vocab)
	var b model.Batch
	for start := 0; start < len(ids)-1; {
		end := start + 1
		if start == 0 {
			end = promptLen
		}
		b.Reset()
		b.BlockTables = append(b.BlockTables, table)
		for p := start; p < end; p++ {
			b.Add(ids[p], int32(p), 0, true)
		}
		logits := make([]float32, (end-start)*vocab)
		if err := forward(&b, logits); err != nil {
			t.Fatal(err)
		}
		out = append(out, logits...)
		start = end
	}
	return out
}

// Open opens the model at path with its tokenizer (model.Open), closed
// when the test ends.
func Open(t testing.TB, path string) *model.Model {
	t.Helper()
	m, err := model.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// Cosine is the cosine similarity of a and b, in float64.
func Cosine[T float32 | float64](a, b []T) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}
