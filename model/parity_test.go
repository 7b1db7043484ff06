package model_test

import (
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

var stdDev = testmodels.StdDev

// teacherForced runs ids as one sequence (the prompt as one batch, then one
// token per step, as llama.cpp made the reference) and returns every row's logits.
func teacherForced(t *testing.T, m *model.Model, promptLen int, ids []int32) []float32 {
	t.Helper()
	return teacherForcedKV(t, m, kv.F16, promptLen, ids, false)
}

func TestLogitParityGGUF(t *testing.T) {
	dir := modelsDir(t)
	for _, r := range testmodels.ReferenceGGUFs(t) {
		name := r.Name()
		t.Run(name, func(t *testing.T) {
			checkParity(t, openModel(t, filepath.Join(dir, r.Rel)), name)
		})
	}
}

func checkParity(t *testing.T, m *model.Model, name string) {
	tol := testmodels.LookupReference(t, name).Bound
	for ci, rc := range loadCases(t, name) {
		ids := append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...)
		got := teacherForced(t, m, len(rc.PromptIDs), ids)
		worst, worstAbs := testmodels.CompareLogits(t, ci, rc, got)
		t.Logf("case %d: %d rows, max |Δ| %.5f, max |Δ|/std %.4f%% (limit %.3f%%)", ci, rc.LogitRows, worstAbs, worst*100, tol*100)
		if worst > tol {
			t.Errorf("case %d: max |Δ|/std %.6f exceeds %.6f", ci, worst, tol)
		}
	}
}

func TestLogitParitySafetensors(t *testing.T) {
	checkParity(t, openModel(t, filepath.Join(modelsDir(t), "tinystories-656k-safetensors")), "tinystories-656k-safetensors")
}
