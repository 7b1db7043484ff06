package model_test

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
)

// TestPhi3LongRope compares phi4-tiny-long (original context 128) with
// llama.cpp's references made at n_ctx 256, where llama.cpp takes the long
// rope factors: troupe with SetContextLen(256) must agree on the four
// prompts with both cache types, and with the short factors
// (SetContextLen(128)) must not.
func TestPhi3LongRope(t *testing.T) {
	const name = "synth-phi4-tiny-long-Q8_0"
	m := synthModel(t, "phi4-tiny-long", "Q8_0", "stories260K.gguf", 1)
	c := &m.Config
	if c.RopeOrigContext != 128 || c.RopeFactorsLong == nil || c.RopeFactorsShort == nil {
		t.Fatalf("original context %d, long factors %v, short %v", c.RopeOrigContext, c.RopeFactorsLong != nil, c.RopeFactorsShort != nil)
	}
	if !slices.Equal(c.RopeFactors, c.RopeFactorsShort) {
		t.Error("a LongRoPE model loads with other than its short factors")
	}
	m.SetContextLen(256)
	refParity(t, m, name, 1e-4, false) // Q8_0: 0.0000% measured
	t.Run("short", func(t *testing.T) {
		m.SetContextLen(128)
		defer m.SetContextLen(256)
		rc := testmodels.CasesIn(t, filepath.Join("testdata", "reference", name))[3]
		ids := append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...)
		got := teacherForcedKV(t, m, kv.F16, len(rc.PromptIDs), ids, false)
		worst := maxRelDiff(rc, got)
		t.Logf("short factors against the long-factor reference: max |Δ|/std %.2f%%", worst*100)
		if worst < 0.1 {
			t.Errorf("short factors give logits %.4f%% of row std from the long-factor reference; the choice makes no difference", worst*100)
		}
	})
}

// maxRelDiff is CompareLogits's figure without its failures: the largest
// |Δ| over the row's reference std.
func maxRelDiff(rc *testmodels.Case, got []float32) float64 {
	nv, worst := rc.NVocab, 0.0
	for r := range rc.LogitRows {
		want, row := rc.Logits[r*nv:(r+1)*nv], got[r*nv:(r+1)*nv]
		var mean, sq float64
		for _, v := range want {
			mean += float64(v)
		}
		mean /= float64(nv)
		for _, v := range want {
			sq += (float64(v) - mean) * (float64(v) - mean)
		}
		std := max(math.Sqrt(sq/float64(nv)), 1e-12)
		for i, v := range want {
			worst = max(worst, math.Abs(float64(row[i])-float64(v))/std)
		}
	}
	return worst
}

// TestSetContextLen checks the boundary of LongRoPE's choice: the long
// factors only for contexts longer than the original one.
func TestSetContextLen(t *testing.T) {
	m := synthModel(t, "phi4-tiny-long", "Q8_0", "stories260K.gguf", 1)
	c := &m.Config
	for _, tc := range []struct {
		n    int
		long bool
	}{{1, false}, {128, false}, {129, true}, {131072, true}, {100, false}} {
		m.SetContextLen(tc.n)
		if got := slices.Equal(c.RopeFactors, c.RopeFactorsLong); got != tc.long {
			t.Errorf("SetContextLen(%d): long factors %v, want %v", tc.n, got, tc.long)
		}
	}
	// A model without LongRoPE keeps its factors (none here).
	other := synthModel(t, "smollm3-tiny", "Q8_0", "stories260K.gguf", 1)
	other.SetContextLen(1 << 20)
	if other.Config.RopeFactors != nil {
		t.Error("SetContextLen gave rope factors to a model without LongRoPE")
	}
}
