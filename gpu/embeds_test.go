package gpu

import (
	"math"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// TestForwardEmbeds: input embeddings (an image's rows, model.Batch.Embeds)
// and rows that attend both ways (Batch.AttendTo) on the device. Rows given
// their own tokens' embeddings give the same bits as the tokens; other rows
// change the logits from their row on, not before; rows attending both
// ways change the image's first row; the logits agree with
// the CPU path's for the same batch, causal and bidirectional; and the
// batch cut in two steps (the first with no logits) gives the same bits as
// in one.
func TestForwardEmbeds(t *testing.T) {
	dev := openDevice(t)
	m, g := load(t, dev, testmodels.Path(t, "stories260K.gguf"), 16, 0)
	rc := testmodels.Cases(t, "stories260K")[0]
	ids := append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...)
	if len(ids) < 10 {
		t.Fatalf("the prompt has %d tokens, want 10 or more", len(ids))
	}
	ids = ids[:10]
	const first, last = 2, 6 // the image's rows: [first, last)
	dim, vocab := m.Config.Dim, m.Config.VocabSize
	row := func(tok int32) []float32 {
		e := make([]float32, dim)
		if err := compute.DequantizeRow(m.Weights.TokEmbd, int(tok), e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	own, image := make([][]float32, len(ids)), make([][]float32, len(ids))
	for i := first; i < last; i++ {
		own[i] = row(ids[i])
		image[i] = row(int32((int(ids[i]) + 37*i) % vocab)) // another token's row, scaled
		for j := range image[i] {
			image[i][j] *= 0.75
		}
	}
	both := make([]int32, len(ids))
	for i := first; i < last; i++ {
		both[i] = last
	}
	batch := func(from, to int, embeds [][]float32, attendTo []int32) *model.Batch {
		var b model.Batch
		b.BlockTables = append(b.BlockTables, identityTable(16))
		for p := from; p < to; p++ {
			b.Add(ids[p], int32(p), 0, to == len(ids))
		}
		if embeds != nil {
			b.Embeds = embeds[from:to]
		}
		if attendTo != nil {
			b.AttendTo = attendTo[from:to]
		}
		return &b
	}
	onGPU := func(b *model.Batch) []float32 {
		t.Helper()
		logits := make([]float32, b.NumLogits()*vocab)
		if err := g.Forward(b, logits); err != nil {
			t.Fatal(err)
		}
		return logits
	}
	cache, err := kv.NewCache(kv.CacheConfig{Layers: m.Config.Layers, KVDim: m.Config.KVDim(), BlockSize: 16, NumBlocks: 16, Type: kv.F16})
	if err != nil {
		t.Fatal(err)
	}
	onCPU := func(b *model.Batch) []float32 {
		t.Helper()
		logits := make([]float32, b.NumLogits()*vocab)
		if err := m.Forward(model.NewState(&m.Config, 1), b, cache, logits); err != nil {
			t.Fatal(err)
		}
		return logits
	}
	same := func(what string, got, want []float32, rows int) {
		t.Helper()
		for i := range rows * vocab {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%s: row %d logit %d: %v, want %v", what, i/vocab, i%vocab, got[i], want[i])
				return
			}
		}
	}
	differs := func(what string, a, b []float32, r int) {
		t.Helper()
		for i := r * vocab; i < (r+1)*vocab; i++ {
			if a[i] != b[i] {
				return
			}
		}
		t.Errorf("%s: row %d unchanged", what, r)
	}
	// near reports the largest |Δ| over a row's std, against the CPU's.
	near := func(what string, got, want []float32) {
		t.Helper()
		worst := 0.0
		for r := range len(want) / vocab {
			w := want[r*vocab : (r+1)*vocab]
			var sum, sq float64
			for _, v := range w {
				sum += float64(v)
				sq += float64(v) * float64(v)
			}
			std := math.Sqrt(sq/float64(vocab) - (sum/float64(vocab))*(sum/float64(vocab)))
			for i, v := range w {
				worst = max(worst, math.Abs(float64(got[r*vocab+i]-v))/std)
			}
		}
		t.Logf("%s: max |Δ|/std against the CPU %.2e", what, worst)
		if worst > 1e-3 {
			t.Errorf("%s: max |Δ|/std against the CPU %.2e > 1e-3", what, worst)
		}
	}

	plain := onGPU(batch(0, len(ids), nil, nil))
	same("the tokens' own rows as embeddings", onGPU(batch(0, len(ids), own, nil)), plain, len(ids))
	withImage := onGPU(batch(0, len(ids), image, nil))
	same("the rows before the image", withImage, plain, first)
	differs("an image row", withImage, plain, first)
	near("causal, with the image", withImage, onCPU(batch(0, len(ids), image, nil)))

	bidi := onGPU(batch(0, len(ids), image, both))
	same("bidirectional: the rows before the image", bidi, withImage, first)
	differs("bidirectional: the image's first row", bidi, withImage, first)
	near("bidirectional, with the image", bidi, onCPU(batch(0, len(ids), image, both)))

	// In two steps: the first (no logits) ends inside the image, which is
	// causal; the second holds the rest.
	onGPU(batch(0, 4, image, nil))
	same("in two steps", onGPU(batch(4, len(ids), image, nil)), withImage[4*vocab:], len(ids)-4)
}
