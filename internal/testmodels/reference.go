package testmodels

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Case is one ../shared/reference/<model>/caseN.json with its logits.
type Case struct {
	Prompt       string    `json:"prompt"`
	NVocab       int       `json:"n_vocab"`
	PromptIDs    []int32   `json:"prompt_ids"`
	GreedyIDs    []int32   `json:"greedy_ids"`
	GreedyMinGap float64   `json:"greedy_min_gap"`
	LogitRows    int       `json:"logit_rows"`
	Logits       []float32 // (LogitRows, NVocab): row i predicts token i+1 of PromptIDs ++ GreedyIDs
}

// ReferenceDir is llama.cpp's reference outputs, beside the models.
func ReferenceDir(t testing.TB) string { return filepath.Join(Dir(t), "..", "reference") }

// Cases reads every reference case of the named model; none is a failure.
func Cases(t testing.TB, name string) []*Case {
	t.Helper()
	return CasesIn(t, filepath.Join(ReferenceDir(t), name))
}

// CasesIn reads every reference case in dir (case0.json, case0.logits, …);
// none is a failure.
func CasesIn(t testing.TB, dir string) []*Case {
	t.Helper()
	var cases []*Case
	for i := 0; ; i++ {
		base := filepath.Join(dir, "case"+strconv.Itoa(i))
		raw, err := os.ReadFile(base + ".json")
		if os.IsNotExist(err) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rc := &Case{}
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
		rc.Logits = make([]float32, len(lb)/4)
		for j := range rc.Logits {
			rc.Logits[j] = math.Float32frombits(binary.LittleEndian.Uint32(lb[j*4:]))
		}
		cases = append(cases, rc)
	}
	if len(cases) == 0 {
		t.Fatalf("no reference cases in %s", dir)
	}
	return cases
}

// StdDev is the standard deviation of a logit row.
func StdDev(row []float32) float64 {
	var s, s2 float64
	for _, v := range row {
		s += float64(v)
		s2 += float64(float64(v) * float64(v)) // explicit conversion: no fused multiply-add, as amd64 computes it
	}
	n := float64(len(row))
	return math.Sqrt(s2/n - float64((s/n)*(s/n)))
}

// Top2 is a row's largest value's index and its lead over the second.
func Top2(row []float32) (best int, gap float64) {
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

// CompareLogits checks got, the teacher-forced logits of case ci, against
// the reference: a top-1 that differs where the reference's lead exceeds
// twice the row's difference is an error. It returns the worst row's max
// |Δ| as a fraction of its std, and the max |Δ|.
func CompareLogits(t testing.TB, ci int, rc *Case, got []float32) (worst, worstAbs float64) {
	t.Helper()
	nv := rc.NVocab
	if len(got) != len(rc.Logits) {
		t.Fatalf("case %d: %d logits, reference %d", ci, len(got), len(rc.Logits))
	}
	for r := range rc.LogitRows {
		ref, row := rc.Logits[r*nv:(r+1)*nv], got[r*nv:(r+1)*nv]
		maxd := 0.0
		for j := range ref {
			maxd = math.Max(maxd, math.Abs(float64(ref[j]-row[j])))
		}
		worst, worstAbs = math.Max(worst, maxd/StdDev(ref)), math.Max(worstAbs, maxd)
		if rb, gap := Top2(ref); gap > 2*maxd {
			if gb, _ := Top2(row); gb != rb {
				t.Errorf("case %d row %d: top-1 %d, reference %d (gap %.4f, max diff %.4f)", ci, r, gb, rb, gap, maxd)
			}
		}
	}
	return worst, worstAbs
}
