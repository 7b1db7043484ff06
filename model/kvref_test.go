package model_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
)

// TestKVCacheLlamaCpp compares teacher-forced logits on each cache type
// with llama.cpp's for the same type, made by scripts/kv-ref-dump.cpp into
// $TROUPE_KV_REF/<reference>/caseN.<type> (float32 rows, as
// ../shared/reference's caseN.logits; see that file for how to make
// them). Without TROUPE_KV_REF it is skipped: the files are not shared.
func TestKVCacheLlamaCpp(t *testing.T) {
	ref := os.Getenv("TROUPE_KV_REF")
	if ref == "" {
		t.Skip("TROUPE_KV_REF is not set (a directory of llama.cpp logits made by scripts/kv-ref-dump.cpp)")
	}
	dir := modelsDir(t)
	for _, tc := range []struct{ file, ref string }{
		{"synthetic/synth-llama-tiny256-Q8_0.gguf", "synth-llama-tiny256-Q8_0"},
		{"synthetic/synth-qwen2-tiny256-Q8_0.gguf", "synth-qwen2-tiny256-Q8_0"},
		{"synthetic-more/synth-llama-hd64-Q8_0.gguf", "synth-llama-hd64-Q8_0"},
		{"synthetic-more/synth-llama-hd128-Q4_K_M.gguf", "synth-llama-hd128-Q4_K_M"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			m := openModel(t, filepath.Join(dir, tc.file))
			vocab := m.Config.VocabSize
			tol := testmodels.LookupReference(t, tc.ref).Bound
			for _, typ := range []kv.CacheType{kv.F16, kv.Q8_0} {
				var worst, worstAbs float64
				for ci, rc := range loadCases(t, tc.ref) {
					raw, err := os.ReadFile(filepath.Join(ref, tc.ref, "case"+string(rune('0'+ci))+"."+typ.String()))
					if err != nil {
						t.Fatal(err)
					}
					ids := append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...)
					got := teacherForcedKV(t, m, typ, len(rc.PromptIDs), ids, true)
					if len(raw) != 4*len(got) {
						t.Fatalf("case %d: %d reference bytes for %d logits", ci, len(raw), len(got))
					}
					for r := range len(got) / vocab {
						want := make([]float32, vocab)
						var d float64
						for i := range want {
							want[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(r*vocab+i):]))
							d = max(d, math.Abs(float64(got[r*vocab+i]-want[i])))
						}
						worst, worstAbs = max(worst, d/stdDev(want)), max(worstAbs, d)
					}
				}
				t.Logf("%s cache vs llama.cpp's: max |Δ| %.5f, max |Δ|/std %.4f%% (limit %.1f%%)", typ, worstAbs, worst*100, tol*100)
				if worst > tol {
					t.Errorf("%s: max |Δ|/std %.4f exceeds %.3f", typ, worst, tol)
				}
			}
		})
	}
}
