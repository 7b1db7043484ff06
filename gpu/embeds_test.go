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
	own, image, both := imageRows(t, m, ids, first, last)
	cache, err := kv.NewCache(kv.CacheConfig{Layers: m.Config.Layers, KVDim: m.Config.KVDim(), BlockSize: 16, NumBlocks: 16, Type: kv.F16})
	if err != nil {
		t.Fatal(err)
	}
	r := &embedsRun{t: t, m: m, g: g, cache: cache, ids: ids, vocab: m.Config.VocabSize}
	n, vocab := len(ids), r.vocab

	plain := r.onGPU(r.batch(0, n, nil, nil))
	r.same("the tokens' own rows as embeddings", r.onGPU(r.batch(0, n, own, nil)), plain, n)
	withImage := r.onGPU(r.batch(0, n, image, nil))
	r.same("the rows before the image", withImage, plain, first)
	r.differs("an image row", withImage, plain, first)
	r.near("causal, with the image", withImage, r.onCPU(r.batch(0, n, image, nil)))

	bidi := r.onGPU(r.batch(0, n, image, both))
	r.same("bidirectional: the rows before the image", bidi, withImage, first)
	r.differs("bidirectional: the image's first row", bidi, withImage, first)
	r.near("bidirectional, with the image", bidi, r.onCPU(r.batch(0, n, image, both)))

	// In two steps: the first (no logits) ends inside the image, which is
	// causal; the second holds the rest.
	r.onGPU(r.batch(0, 4, image, nil))
	r.same("in two steps", r.onGPU(r.batch(4, n, image, nil)), withImage[4*vocab:], n-4)
}

// imageRows are the input rows of TestForwardEmbeds's image, rows [first,
// last) of ids: own, the tokens' own embeddings; image, other tokens' rows
// scaled by 0.75; both, Batch.AttendTo with the image's rows attending to
// one another both ways.
func imageRows(t *testing.T, m *model.Model, ids []int32, first, last int) (own, image [][]float32, both []int32) {
	dim, vocab := m.Config.Dim, m.Config.VocabSize
	row := func(tok int32) []float32 {
		e := make([]float32, dim)
		if err := compute.DequantizeRow(m.Weights.TokEmbd, int(tok), e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	own, image = make([][]float32, len(ids)), make([][]float32, len(ids))
	both = make([]int32, len(ids))
	for i := first; i < last; i++ {
		own[i] = row(ids[i])
		image[i] = row(int32((int(ids[i]) + 37*i) % vocab)) // another token's row, scaled
		for j := range image[i] {
			image[i][j] *= 0.75
		}
		both[i] = int32(last)
	}
	return own, image, both
}

// embedsRun runs batches of ids on the device (g) and on the CPU (m, with
// its own cache) and compares their logits.
type embedsRun struct {
	t     *testing.T
	m     *model.Model
	g     *Model
	cache *kv.Cache // the CPU path's
	ids   []int32
	vocab int
}

// batch holds ids[from:to] at their positions, with logits for every row
// when it ends the prompt, and the rows' embeds and attendTo when given.
func (r *embedsRun) batch(from, to int, embeds [][]float32, attendTo []int32) *model.Batch {
	var b model.Batch
	b.BlockTables = append(b.BlockTables, identityTable(16))
	for p := from; p < to; p++ {
		b.Add(r.ids[p], int32(p), 0, to == len(r.ids))
	}
	if embeds != nil {
		b.Embeds = embeds[from:to]
	}
	if attendTo != nil {
		b.AttendTo = attendTo[from:to]
	}
	return &b
}

func (r *embedsRun) onGPU(b *model.Batch) []float32 {
	r.t.Helper()
	logits := make([]float32, b.NumLogits()*r.vocab)
	if err := r.g.Forward(b, logits); err != nil {
		r.t.Fatal(err)
	}
	return logits
}

func (r *embedsRun) onCPU(b *model.Batch) []float32 {
	r.t.Helper()
	logits := make([]float32, b.NumLogits()*r.vocab)
	if err := r.m.Forward(model.NewState(&r.m.Config, 1), b, r.cache, logits); err != nil {
		r.t.Fatal(err)
	}
	return logits
}

// same checks that the first rows rows of got and want are the same bits.
func (r *embedsRun) same(what string, got, want []float32, rows int) {
	r.t.Helper()
	for i := range rows * r.vocab {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			r.t.Errorf("%s: row %d logit %d: %v, want %v", what, i/r.vocab, i%r.vocab, got[i], want[i])
			return
		}
	}
}

// differs checks that row row of a and b differ.
func (r *embedsRun) differs(what string, a, b []float32, row int) {
	r.t.Helper()
	for i := row * r.vocab; i < (row+1)*r.vocab; i++ {
		if a[i] != b[i] {
			return
		}
	}
	r.t.Errorf("%s: row %d unchanged", what, row)
}

// near reports the largest |Δ| over a row's std, against the CPU's, and
// checks it is at most 1e-3.
func (r *embedsRun) near(what string, got, want []float32) {
	r.t.Helper()
	worst := 0.0
	for row := range len(want) / r.vocab {
		w := want[row*r.vocab : (row+1)*r.vocab]
		std := testmodels.StdDev(w)
		for i, v := range w {
			worst = max(worst, math.Abs(float64(got[row*r.vocab+i]-v))/std)
		}
	}
	r.t.Logf("%s: max |Δ|/std against the CPU %.2e", what, worst)
	if worst > 1e-3 {
		r.t.Errorf("%s: max |Δ|/std against the CPU %.2e > 1e-3", what, worst)
	}
}
