package model_test

import (
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
)

// TestGptOssMXFP4Parity is TestGptOssParity on gpt-oss-tiny with gpt-oss's
// own expert type: `troupe synth --type MXFP4_MOE` (experts MXFP4, every
// other matrix Q8_0), with llama.cpp's references from scripts/make-refs.py.
func TestGptOssMXFP4Parity(t *testing.T) {
	const name = "synth-gpt-oss-tiny-MXFP4_MOE"
	m := synthModel(t, "gpt-oss-tiny", "MXFP4_MOE", "stories260K.gguf", 1)
	for _, kc := range []struct {
		typ kv.CacheType
		dir string
	}{{kv.F16, ""}, {kv.Q8_0, "kv-q8_0"}} {
		t.Run(kc.typ.String(), func(t *testing.T) {
			for ci, rc := range testmodels.CasesIn(t, filepath.Join("testdata", "reference", name, kc.dir)) {
				ids := append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...)
				got := teacherForcedKV(t, m, kc.typ, len(rc.PromptIDs), ids, true)
				worst, worstAbs := testmodels.CompareLogits(t, ci, rc, got)
				t.Logf("case %d: %d rows, max |Δ| %.5f, max |Δ|/std %.4f%% (limit 0.010%%)", ci, rc.LogitRows, worstAbs, worst*100)
				if worst > 1e-4 {
					t.Errorf("case %d: max |Δ|/std %.6f exceeds 0.0001", ci, worst)
				}
				if rc.GreedyMinGap > 0.005 {
					checkGreedy(t, ci, rc, got)
				}
			}
		})
	}
}
