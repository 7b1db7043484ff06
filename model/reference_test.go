package model_test

import (
	"encoding/binary"
	"encoding/json"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// refCase is one ../shared/reference/<model>/caseN.json.
type refCase struct {
	Prompt       string  `json:"prompt"`
	NVocab       int     `json:"n_vocab"`
	PromptIDs    []int32 `json:"prompt_ids"`
	GreedyIDs    []int32 `json:"greedy_ids"`
	GreedyMinGap float64 `json:"greedy_min_gap"`
	LogitRows    int     `json:"logit_rows"`
	logits       []float32
}

func modelsDir(t testing.TB) string { return testmodels.Dir(t) }

func refDir(t testing.TB) string { return filepath.Join(modelsDir(t), "..", "reference") }

func loadCases(t testing.TB, name string) []*refCase {
	t.Helper()
	var cases []*refCase
	for i := 0; ; i++ {
		base := filepath.Join(refDir(t), name, "case"+string(rune('0'+i)))
		raw, err := os.ReadFile(base + ".json")
		if os.IsNotExist(err) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rc := &refCase{}
		if err := json.Unmarshal(raw, rc); err != nil {
			t.Fatalf("%s.json: %v", base, err)
		}
		lb, err := os.ReadFile(base + ".logits")
		if err != nil {
			t.Fatal(err)
		}
		if len(lb) != rc.LogitRows*rc.NVocab*4 {
			t.Fatalf("%s.logits: %d bytes, want %d rows of %d", base, len(lb), rc.LogitRows, rc.NVocab)
		}
		rc.logits = make([]float32, len(lb)/4)
		for j := range rc.logits {
			rc.logits[j] = math.Float32frombits(binary.LittleEndian.Uint32(lb[j*4:]))
		}
		cases = append(cases, rc)
	}
	if len(cases) == 0 {
		t.Fatalf("no reference cases for %s", name)
	}
	return cases
}
