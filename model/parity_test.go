package model_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// stdDev is the standard deviation of a logit row.
func stdDev(row []float32) float64 {
	var s, s2 float64
	for _, v := range row {
		s += float64(v)
		s2 += float64(v) * float64(v)
	}
	n := float64(len(row))
	return math.Sqrt(s2/n - (s/n)*(s/n))
}

func top2(row []float32) (best int, gap float64) {
	b, s := 0, -1
	for i, v := range row {
		if v > row[b] || i == 0 {
			if i != 0 {
				s = b
			}
			b = i
		} else if s < 0 || v > row[s] {
			s = i
		}
	}
	return b, float64(row[b] - row[s])
}

// teacherForced runs ids as one sequence (the prompt as one batch, then one
// token per step, as llama.cpp made the reference) and returns every row's logits.
func teacherForced(t *testing.T, m *model.Model, promptLen int, ids []int32) []float32 {
	t.Helper()
	c := &m.Config
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: (len(ids)+15)/16 + 1, RoundF16: true})
	if err != nil {
		t.Fatal(err)
	}
	pool := kv.NewPool(cache.NumBlocks)
	table, err := pool.Grow(nil, len(ids), cache.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	st := model.NewState(c, 2)
	out := make([]float32, 0, len(ids)*c.VocabSize)
	var b model.Batch
	for start := 0; start < len(ids)-1; {
		end := start + 1
		if start == 0 {
			end = promptLen
		}
		b.Reset()
		b.BlockTables = append(b.BlockTables, table)
		for p := start; p < end; p++ {
			b.Add(ids[p], int32(p), 0, true)
		}
		logits := make([]float32, (end-start)*c.VocabSize)
		if err := m.Forward(st, &b, cache, logits); err != nil {
			t.Fatal(err)
		}
		out = append(out, logits...)
		start = end
	}
	return out
}

// tolerance is the allowed max |Δlogit| as a fraction of the row's std.
func tolerance(name string) float64 {
	if strings.Contains(name, "Q2_K") || strings.Contains(name, "Q4_K") || strings.Contains(name, "Q3_K") {
		return 0.08
	}
	return 0.025
}

func TestLogitParityGGUF(t *testing.T) {
	dir := modelsDir(t)
	files := []string{"stories260K.gguf", "TinyStories-656K-Q8_0.gguf"}
	syn, _ := filepath.Glob(filepath.Join(dir, "synthetic", "*.gguf"))
	for _, s := range syn {
		files = append(files, filepath.Join("synthetic", filepath.Base(s)))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".gguf")
		t.Run(name, func(t *testing.T) {
			m, _, err := model.LoadGGUF(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			checkParity(t, m, name)
		})
	}
}

func checkParity(t *testing.T, m *model.Model, name string) {
	tol := tolerance(name)
	for ci, rc := range loadCases(t, name) {
		ids := append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...)
		got := teacherForced(t, m, len(rc.PromptIDs), ids)
		nv := rc.NVocab
		if len(got) != len(rc.logits) {
			t.Fatalf("case %d: %d logits, reference %d", ci, len(got), len(rc.logits))
		}
		worst, worstAbs := 0.0, 0.0
		for r := range rc.LogitRows {
			ref, row := rc.logits[r*nv:(r+1)*nv], got[r*nv:(r+1)*nv]
			sd := stdDev(ref)
			maxd := 0.0
			for j := range ref {
				maxd = math.Max(maxd, math.Abs(float64(ref[j]-row[j])))
			}
			worst, worstAbs = math.Max(worst, maxd/sd), math.Max(worstAbs, maxd)
			if rb, gap := top2(ref); gap > 2*maxd {
				if gb, _ := top2(row); gb != rb {
					t.Errorf("case %d row %d: top-1 %d, reference %d (gap %.4f, max diff %.4f)", ci, r, gb, rb, gap, maxd)
				}
			}
		}
		t.Logf("case %d: %d rows, max |Δ| %.5f, max |Δ|/std %.4f%% (limit %.1f%%)", ci, rc.LogitRows, worstAbs, worst*100, tol*100)
		if worst > tol {
			t.Errorf("case %d: max |Δ|/std %.4f exceeds %.3f", ci, worst, tol)
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
