package model_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// embedRef is one file of testdata/embed, made by scripts/embed-ref.sh
// with llama.cpp's llama-embedding.
type embedRef struct {
	Model     string `json:"model"`
	Pooling   string `json:"pooling"`
	Normalize int    `json:"normalize"`
	Inputs    []struct {
		Text      string    `json:"text"`
		Tokens    []int32   `json:"tokens"`
		Embedding []float32 `json:"embedding"`
	} `json:"inputs"`
}

var embedModels = map[string]string{
	"stories260K":              "stories260K.gguf",
	"synth-llama-tiny256-Q8_0": "synthetic/synth-llama-tiny256-Q8_0.gguf",
	"bert-tiny-F16":            "synth:bert-tiny",
	"nomic-bert-tiny-F16":      "synth:nomic-bert-tiny",
}

// embedModelPath is the file of one of embedModels: a shared model, or an
// encoder synthesized here as scripts/embed-ref.sh does (troupe synth,
// seed 1, F16, the bge vocabulary).
func embedModelPath(t *testing.T, rel string) string {
	t.Helper()
	shape, ok := strings.CutPrefix(rel, "synth:")
	if !ok {
		return testmodels.Path(t, rel)
	}
	return synthEncoder(t, shape)
}

// synthEncoder writes the F16 encoder of shape (seed 1) into a temporary
// directory.
func synthEncoder(t *testing.T, shape string) string {
	return synthtest.Write(t, shape, "F16", "vocab/ggml-vocab-bert-bge.gguf", 1)
}

// embedAll computes the pooled, normalized embedding of each sequence, the
// sequences split into steps of at most chunk tokens, every sequence's next
// chunk in the same step (chunk <= 0: each sequence whole, all in one step).
func embedAll(t *testing.T, m *model.Model, seqs [][]int32, p model.Pooling, norm, chunk int) [][]float32 {
	t.Helper()
	c := &m.Config
	const bs = 16
	total := 0
	for _, s := range seqs {
		total += (len(s) + bs - 1) / bs
	}
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), BlockSize: bs, NumBlocks: total})
	if err != nil {
		t.Fatal(err)
	}
	pool := kv.NewPool(total)
	var b model.Batch
	poolers := make([]model.Pooler, len(seqs))
	for i, s := range seqs {
		table, err := pool.Grow(nil, len(s), bs)
		if err != nil {
			t.Fatal(err)
		}
		b.BlockTables = append(b.BlockTables, table)
		poolers[i].Type = p
	}
	st := model.NewState(c, 2)
	done := make([]int, len(seqs))
	for {
		b.Tokens, b.Positions, b.Seq, b.Logits, b.Hidden = nil, nil, nil, nil, nil
		for i, s := range seqs {
			end := len(s)
			if chunk > 0 {
				end = min(end, done[i]+chunk)
			}
			for pos := done[i]; pos < end; pos++ {
				b.Add(s[pos], int32(pos), int32(i), false)
				b.Hidden = append(b.Hidden, true)
			}
		}
		if len(b.Tokens) == 0 {
			break
		}
		hidden := make([]float32, len(b.Tokens)*c.Dim)
		if err := m.ForwardHidden(st, &b, cache, nil, hidden); err != nil {
			t.Fatal(err)
		}
		for r := range b.Tokens {
			i := b.Seq[r]
			poolers[i].Add(int(b.Positions[r]), hidden[r*c.Dim:(r+1)*c.Dim])
			done[i] = int(b.Positions[r]) + 1
		}
	}
	out := make([][]float32, len(seqs))
	for i := range poolers {
		out[i] = poolers[i].Result()
		model.Normalize(out[i], norm)
	}
	return out
}

// TestEmbedParity checks pooled embeddings against llama.cpp's
// llama-embedding (testdata/embed): cosine >= 0.9999 per input.
func TestEmbedParity(t *testing.T) {
	opened := map[string]*model.Model{}
	defer func() {
		for _, m := range opened {
			m.Close()
		}
	}()
	forEachRef(t, "embed", "embed-ref.sh", func(t *testing.T, ref *embedRef) {
		rel, ok := embedModels[ref.Model]
		if !ok {
			t.Fatalf("no model file known for %q", ref.Model)
		}
		m := opened[rel]
		if m == nil {
			var err error
			if m, _, err = model.LoadGGUF(embedModelPath(t, rel)); err != nil {
				t.Fatal(err)
			}
			opened[rel] = m
		}
		p, err := model.ParsePooling(ref.Pooling)
		if err != nil {
			t.Fatal(err)
		}
		var seqs [][]int32
		for _, in := range ref.Inputs {
			seqs = append(seqs, in.Tokens)
		}
		got := embedAll(t, m, seqs, p, ref.Normalize, 0)
		worst := 1.0
		for i, in := range ref.Inputs {
			cos := reftest.Cosine(got[i], in.Embedding)
			worst = min(worst, cos)
			if !(cos >= 0.9999) {
				t.Errorf("input %d (%q): cosine %.6f with llama-embedding, want >= 0.9999", i, in.Text, cos)
			}
		}
		t.Logf("%d inputs, lowest cosine %.7f", len(ref.Inputs), worst)
	})
}

// TestEmbedBatchInvariance checks that an embedding is the same bit for bit
// computed alone and whole, alone in chunks, and beside other sequences in
// chunks of another size.
func TestEmbedBatchInvariance(t *testing.T) {
	m := openModel(t, testmodels.Path(t, "stories260K.gguf"))
	seq := []int32{1, 291, 376, 400, 428, 352, 303, 267, 265, 282, 295, 433, 269, 394, 261, 370, 352, 266, 268, 388, 426}
	others := [][]int32{{1, 403, 407, 261, 378}, {1, 317, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310, 311, 312, 313, 314, 315, 316, 317}}
	for _, p := range []model.Pooling{model.PoolingMean, model.PoolingCLS, model.PoolingLast} {
		alone := embedAll(t, m, [][]int32{seq}, p, 2, 0)[0]
		for _, tc := range []struct {
			name  string
			seqs  [][]int32
			chunk int
		}{
			{"alone in chunks of 7", [][]int32{seq}, 7},
			{"batched whole", append([][]int32{others[0]}, seq, others[1]), 0},
			{"batched in chunks of 5", append([][]int32{others[1]}, seq, others[0]), 5},
		} {
			i := slices.IndexFunc(tc.seqs, func(s []int32) bool { return len(s) == len(seq) && s[1] == seq[1] })
			got := embedAll(t, m, tc.seqs, p, 2, tc.chunk)[i]
			if !slices.Equal(got, alone) {
				t.Errorf("%s pooling, %s: embedding differs from the sequence alone (cosine %.9f)", p, tc.name, reftest.Cosine(got, alone))
			}
		}
	}
}

func TestParsePooling(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want model.Pooling
		err  bool
	}{{"", model.PoolingNone, false}, {"mean", model.PoolingMean, false}, {"cls", model.PoolingCLS, false},
		{"last", model.PoolingLast, false}, {"rank", 0, true}, {"max", 0, true}} {
		got, err := model.ParsePooling(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParsePooling(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		norm int
		in   []float32
		want []float32
	}{
		{-1, []float32{3, 4}, []float32{3, 4}},
		{2, []float32{3, 4}, []float32{0.6, 0.8}},
		{1, []float32{1, -3}, []float32{0.25, -0.75}},
		{0, []float32{1, -2}, []float32{16380, -32760}},
		{2, []float32{0, 0}, []float32{0, 0}},
	} {
		v := slices.Clone(tc.in)
		model.Normalize(v, tc.norm)
		for i := range v {
			if math.Abs(float64(v[i]-tc.want[i])) > 1e-6*max(1, math.Abs(float64(tc.want[i]))) {
				t.Errorf("Normalize(%v, %d) = %v, want %v", tc.in, tc.norm, v, tc.want)
				break
			}
		}
	}
}

// TestEncoderBatch checks that an encoder's embedding is the same bit for
// bit alone and beside other sequences, and that a sequence split over
// batches is refused (its tokens attend to all of it).
func TestEncoderBatch(t *testing.T) {
	for _, shape := range []string{"bert-tiny", "nomic-bert-tiny"} {
		m := openModel(t, synthEncoder(t, shape))
		if !m.Config.Encoder {
			t.Fatalf("%s: not an encoder", shape)
		}
		seq := []int32{101, 1996, 2210, 3899, 2743, 2000, 1996, 2380, 1012, 102}
		others := [][]int32{{101, 7592, 102}, {101, 2023, 2003, 1037, 2936, 6251, 2007, 2062, 19204, 2015, 1999, 2009, 1012, 102}}
		p, _ := m.EmbedPooling(model.PoolingNone)
		alone := embedAll(t, m, [][]int32{seq}, p, 2, 0)[0]
		got := embedAll(t, m, [][]int32{others[0], seq, others[1]}, p, 2, 0)[1]
		if !slices.Equal(got, alone) {
			t.Errorf("%s: batched embedding differs from alone (cosine %.9f)", shape, reftest.Cosine(got, alone))
		}
		c := &m.Config
		cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), BlockSize: 16, NumBlocks: 1})
		if err != nil {
			t.Fatal(err)
		}
		b := model.Batch{BlockTables: [][]int32{{0}}}
		b.Add(seq[3], 3, 0, false)
		if err := m.Forward(model.NewState(c, 1), &b, cache, nil); err == nil {
			t.Errorf("%s: a batch holding part of a sequence was computed", shape)
		}
	}
}

// TestGELU checks the table GELU against its definition: the input and the
// result rounded to f16, 0 and the identity past ±10.
func TestGELU(t *testing.T) {
	in := []float32{-12, -10, -9.99, -3, -1, -0.5, -1e-3, 0, 1e-3, 0.3, 0.5, 1, 2.5, 9.99, 10, 15}
	for i := range 1000 {
		in = append(in, float32(i-500)/37)
	}
	got := slices.Clone(in)
	model.GELU(got)
	for i, v := range in {
		want := v
		switch {
		case v <= -10:
			want = 0
		case v >= 10:
		default:
			h := float64(compute.RoundF16(v))
			want = compute.RoundF16(float32(0.5 * h * (1 + math.Tanh(0.7978845608028654*h*(1+0.044715*h*h)))))
		}
		if math.Abs(float64(got[i]-want)) > 2e-3*math.Abs(float64(want))+1e-5 { // f16 steps; the far negative tail cancels
			t.Errorf("gelu(%g) = %g, want %g", v, got[i], want)
		}
	}
}
