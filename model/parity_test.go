package model_test

import (
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

var stdDev = testmodels.StdDev

// teacherForced runs ids as one sequence (the prompt as one batch, then one
// token per step, as llama.cpp made the reference) and returns every row's logits.
func teacherForced(t *testing.T, m *model.Model, promptLen int, ids []int32) []float32 {
	t.Helper()
	c := &m.Config
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: (len(ids)+15)/16 + 1})
	if err != nil {
		t.Fatal(err)
	}
	pool := kv.NewPool(cache.NumBlocks)
	table, err := pool.Grow(nil, len(ids), cache.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	st := model.NewState(c, 2)
	forward := func(b *model.Batch, logits []float32) error { return m.Forward(st, b, cache, logits) }
	return reftest.TeacherForced(t, forward, c.VocabSize, promptLen, ids, table)
}

func TestLogitParityGGUF(t *testing.T) {
	dir := modelsDir(t)
	for _, r := range testmodels.ReferenceGGUFs(t) {
		name := r.Name()
		t.Run(name, func(t *testing.T) {
			m, _, err := model.LoadGGUF(filepath.Join(dir, r.Rel))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			checkParity(t, m, name)
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
	m, _, err := model.LoadSafetensors(filepath.Join(modelsDir(t), "tinystories-656k-safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	checkParity(t, m, "tinystories-656k-safetensors")
}
