package model_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// kvGolden are the SHA-256 of the teacher-forced logits (float32 bits,
// little endian) of kvGoldenLogits, recorded with the float32 K/V cache
// that held f16-rounded values (before the cache stored f16): the f16 cache
// must give the same logits bit for bit. The models cover every attention
// kernel: head_dim 8 (stories260K), 32 (tiny256, with GQA and biases in
// qwen2), 64 and 128 (the grouped AVX-512 kernels).
var kvGolden = map[string]string{
	// F32 weights: the hash of the kern_f.go float kernels, which sum in
	// another order than the gonum dot products the f16 cache was first
	// checked against (c306f780…).
	"stories260K.gguf":                          "e0fd1dd0d7e73faf3fb7bc225816fd514f4b1a60835a8cb1178502a83a0b4f57",
	"synthetic/synth-llama-tiny256-Q8_0.gguf":   "56bbbcca02ff7ba6f550c5a8fea883a6c381f18f3fcb87ccb6ae87248e7530cf",
	"synthetic/synth-qwen2-tiny256-Q8_0.gguf":   "aa7215b0af7687fd9f3c3ee348b4b21779282360e5b637c27a13eff88fdfa436",
	"synthetic-more/synth-llama-hd64-Q8_0.gguf": "1d65a92fe2fc7202171f3b8f8a5bd25bfee935f7ad6ac405dfceed8b5a1bf85c",
	// Since the rope and the softmax take glibc's cosf/sinf and expf
	// (compute.Cosf, Sinf, Expf) as ggml does (6657967e…).
	"synthetic-more/synth-llama-hd128-Q4_K_M.gguf": "7f9d155a3fa7eb55c3f12a981f1b472d74381a2c0ba3e39387c6ce528299e3cd",
}

// kvGoldenLogits runs 48 seeded random tokens (a 40-token prompt as one
// batch, then one token a step) through m with an f16 cache and hashes
// every row's logits.
func kvGoldenLogits(t *testing.T, m *model.Model) string {
	c := &m.Config
	rng := rand.New(rand.NewPCG(17, 4))
	ids := make([]int32, 48)
	for i := range ids {
		ids[i] = int32(rng.IntN(c.VocabSize))
	}
	logits := teacherForcedKV(t, m, kv.F16, 40, ids, false)
	h := sha256.New()
	var buf [4]byte
	for _, v := range logits {
		binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
		h.Write(buf[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestKVCacheF16Golden(t *testing.T) {
	dir := modelsDir(t)
	for _, f := range []string{
		"stories260K.gguf",
		"synthetic/synth-llama-tiny256-Q8_0.gguf",
		"synthetic/synth-qwen2-tiny256-Q8_0.gguf",
		"synthetic-more/synth-llama-hd64-Q8_0.gguf",
		"synthetic-more/synth-llama-hd128-Q4_K_M.gguf",
	} {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m := openModel(t, filepath.Join(dir, f))
			t.Logf("%s: head_dim %d, heads %d/%d", f, m.Config.HeadDim, m.Config.Heads, m.Config.KVHeads)
			got := kvGoldenLogits(t, m)
			if want := kvGolden[f]; got != want {
				t.Errorf("%q: %s, want %s", f, got, want)
			}
		})
	}
}

// teacherForcedKV runs ids as one sequence (promptLen tokens as one batch,
// then one a step) on a cache of type t and returns every row's logits.
func teacherForcedKV(t *testing.T, m *model.Model, typ kv.CacheType, promptLen int, ids []int32, ggml bool) []float32 {
	t.Helper()
	c := &m.Config
	cache, table := seqCache(t, c, len(ids), typ)
	st := model.NewState(c, 2)
	st.MatchGGMLBatching(ggml)
	return reftest.TeacherForced(t, func(b *model.Batch, l []float32) error { return m.Forward(st, b, cache, l) },
		c.VocabSize, promptLen, ids, table)
}

// TestKVCacheQ8_0 compares the logits of a Q8_0 cache with those of the
// F16 cache (which match llama.cpp's within the parity tolerance) on the
// reference cases: the worst row's max |Δ| as a fraction of the row's
// logit standard deviation stays under a bound measured on these files
// (the quantization of K, V and q moves the logits of these random-weight
// models by 6–12%; a wrong scale or offset lands near 100%).
func TestKVCacheQ8_0(t *testing.T) {
	dir := modelsDir(t)
	for _, tc := range []struct {
		file, ref string
		bound     float64
	}{
		{"synthetic/synth-llama-tiny256-Q8_0.gguf", "synth-llama-tiny256-Q8_0", 0.08},       // measured 6.39%
		{"synthetic/synth-qwen2-tiny256-Q8_0.gguf", "synth-qwen2-tiny256-Q8_0", 0.08},       // measured 6.35%
		{"synthetic-more/synth-llama-hd64-Q8_0.gguf", "synth-llama-hd64-Q8_0", 0.105},       // measured 8.39%
		{"synthetic-more/synth-llama-hd128-Q4_K_M.gguf", "synth-llama-hd128-Q4_K_M", 0.145}, // measured 11.51%
	} {
		t.Run(tc.ref, func(t *testing.T) {
			m := openModel(t, filepath.Join(dir, tc.file))
			vocab := m.Config.VocabSize
			var worst float64
			for _, rc := range loadCases(t, tc.ref) {
				ids := append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...)
				f16 := teacherForcedKV(t, m, kv.F16, len(rc.PromptIDs), ids, false)
				q8 := teacherForcedKV(t, m, kv.Q8_0, len(rc.PromptIDs), ids, false)
				for r := range len(f16) / vocab {
					a, b := f16[r*vocab:(r+1)*vocab], q8[r*vocab:(r+1)*vocab]
					var d float64
					for i := range a {
						d = max(d, math.Abs(float64(a[i]-b[i])))
					}
					worst = max(worst, d/stdDev(a))
				}
			}
			t.Logf("q8_0 vs f16 cache: max |Δ|/std %.4f%% (bound %.1f%%)", worst*100, tc.bound*100)
			if worst > tc.bound || worst == 0 {
				t.Errorf("max |Δ|/std %.4f: want in (0, %.3f]", worst, tc.bound)
			}
		})
	}
}

// BenchmarkDecodeLongContext decodes one token after 1024 cached positions
// on the head_dim-64 synthetic model (attention is most of the step), for
// each cache type.
func BenchmarkDecodeLongContext(b *testing.B) {
	const ctx = 1024
	m := openBench(b, "synthetic-more/synth-llama-hd64-Q8_0.gguf")
	for _, typ := range []kv.CacheType{kv.F16, kv.Q8_0} {
		b.Run(typ.String(), func(b *testing.B) {
			cache := benchDecode(b, m, typ, 1, ctx)
			b.ReportMetric(float64(cache.Bytes())/(1<<20), "KV-MiB")
		})
	}
}

// TestForwardAllocsQ8_0: with a Q8_0 cache too (its rotations, the
// quantized query), a decode step allocates nothing once the State has
// grown.
func TestForwardAllocsQ8_0(t *testing.T) {
	checkDecodeAllocs(t, openModel(t, filepath.Join(modelsDir(t), "synthetic-more/synth-llama-hd64-Q8_0.gguf")), kv.Q8_0)
}
