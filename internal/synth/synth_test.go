package synth_test

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/gguf"
)

// tiny is a small shape for tests: dim 512 keeps every K-quant row whole,
// ffn 640 is not a multiple of 256 (ffn_down takes the fallbacks).
var tiny = synth.Shape{Name: "tiny", Arch: "llama", Dim: 512, Layers: 8, Heads: 8, KVHeads: 2, FFN: 640,
	Vocab: 512, Context: 256, RopeBase: 10000, NormEps: 1e-5}

// stories260K opens the GGUF file whose tokenizer the tests' models take.
func stories260K(t *testing.T) *gguf.File {
	t.Helper()
	vf, err := gguf.Open(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vf.Close() })
	return vf
}

// writeTemp writes the model o describes into t's temporary directory and
// returns its path and the tokens of its vocabulary.
func writeTemp(t *testing.T, o synth.Options) (string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	n, err := synth.WriteFile(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return path, n
}

// TestWrite writes tiny models in several types with stories260K's
// vocabulary, opens each with troupe and runs a forward pass (finite
// logits), and checks the tensor types llama-quantize would choose.
func TestWrite(t *testing.T) {
	vf := stories260K(t)
	for _, name := range []string{"Q4_K_M", "Q8_0", "F16", "IQ4_XS", "IQ4_NL"} {
		t.Run(name, func(t *testing.T) {
			ft, ok := synth.LookupFileType(name)
			if !ok {
				t.Fatal("unknown type")
			}
			path, n := writeTemp(t, synth.Options{Shape: tiny, Type: ft, Vocab: vf, Seed: 3, Workers: 2})
			if n != 512 {
				t.Fatalf("Write: %d tokens", n)
			}
			m, err := model.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			c := &m.Config
			if c.Dim != 512 || c.Layers != 8 || c.KVHeads != 2 || c.VocabSize != 512 {
				t.Fatalf("config %+v", c)
			}
			cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: 1})
			if err != nil {
				t.Fatal(err)
			}
			table, err := kv.NewPool(1).Grow(nil, 4, cache.BlockSize)
			if err != nil {
				t.Fatal(err)
			}
			b := &model.Batch{BlockTables: [][]int32{table}}
			for i := range 4 {
				b.Add(int32(i+1), int32(i), 0, i == 3)
			}
			logits := make([]float32, c.VocabSize)
			if err := m.Forward(model.NewState(c, 2), b, cache, logits); err != nil {
				t.Fatal(err)
			}
			for i, v := range logits {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("logit %d = %v", i, v)
				}
			}
			w := m.Weights
			if name == "Q4_K_M" {
				// layer 0 and 7 (first and last eighth) get Q6_K attn_v; ffn_down's
				// 640 columns fall back (Q6_K → Q8_0, Q4_K → Q5_0).
				for l, want := range map[int][3]compute.DType{
					0: {compute.Q4_K, compute.Q6_K, compute.Q8_0},
					1: {compute.Q4_K, compute.Q4_K, compute.Q5_0},
					3: {compute.Q4_K, compute.Q6_K, compute.Q8_0},
					7: {compute.Q4_K, compute.Q6_K, compute.Q8_0},
				} {
					lw := w.Layers[l]
					if got := [3]compute.DType{lw.Q.Type, lw.V.Type, lw.Down.Type}; got != want {
						t.Errorf("layer %d: q, v, down types %v, want %v", l, got, want)
					}
				}
				if w.Output.Type != compute.Q6_K || w.TokEmbd.Type != compute.Q4_K {
					t.Errorf("output %v, token_embd %v: want Q6_K, Q4_K", w.Output.Type, w.TokEmbd.Type)
				}
			}
			if name == "IQ4_XS" || name == "IQ4_NL" {
				// 8 query heads per 2 KV heads: Q5_K attn_v; Q5_K ffn_down in the
				// first eighth; ffn_down's 640 columns fall back (Q5_K → Q5_1,
				// IQ4_XS → IQ4_NL).
				base, _ := compute.ParseDType(name)
				for l, want := range map[int][3]compute.DType{
					0: {base, compute.Q5_K, compute.Q5_1},
					1: {base, compute.Q5_K, compute.IQ4_NL},
					7: {base, compute.Q5_K, compute.IQ4_NL},
				} {
					lw := w.Layers[l]
					if got := [3]compute.DType{lw.Q.Type, lw.V.Type, lw.Down.Type}; got != want {
						t.Errorf("layer %d: q, v, down types %v, want %v", l, got, want)
					}
				}
				if w.Output.Type != compute.Q6_K || w.TokEmbd.Type != base {
					t.Errorf("output %v, token_embd %v: want Q6_K, %v", w.Output.Type, w.TokEmbd.Type, base)
				}
			}
		})
	}
}

// TestWriteDeterministic checks that the bytes depend on the seed and not
// on the number of workers.
func TestWriteDeterministic(t *testing.T) {
	vf := stories260K(t)
	ft, _ := synth.LookupFileType("Q4_0")
	write := func(seed uint64, workers int) []byte {
		var buf bytes.Buffer
		if _, err := synth.Write(&buf, synth.Options{Shape: tiny, Type: ft, Vocab: vf, Seed: seed, Workers: workers}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b, c := write(1, 1), write(1, 3), write(2, 2)
	if !bytes.Equal(a, b) {
		t.Error("1 and 3 workers wrote different bytes")
	}
	if bytes.Equal(a, c) {
		t.Error("seeds 1 and 2 wrote the same bytes")
	}
}
