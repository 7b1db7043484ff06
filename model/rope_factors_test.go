package model

import (
	"math"
	"testing"

	"github.com/troupe-llm/troupe/model/safetensors"
)

// TestLlama3RopeFactors checks Llama 3.1 8B's rope scaling (factor 8, low 1,
// high 4, original context 8192, base 500000, head dim 128) against values
// computed with the formula of llama.cpp's converter in Python.
func TestLlama3RopeFactors(t *testing.T) {
	rs := &safetensors.RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	got := llama3RopeFactors(rs, 500000, 128)
	want := []float64{1, 1.207484, 1.553415, 2.026313, 2.69453, 3.684253, 5.257327, 8} // factors 28..35
	if len(got) != 64 || got[0] != 1 || got[63] != 8 {
		t.Fatalf("%d factors, first %g, last %g", len(got), got[0], got[len(got)-1])
	}
	for i, w := range want {
		if d := math.Abs(float64(got[28+i]) - w); d > 1e-5 {
			t.Errorf("factor %d = %g, want %g", 28+i, got[28+i], w)
		}
	}
}
