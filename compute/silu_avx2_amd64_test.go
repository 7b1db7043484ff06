package compute

import (
	"math"
	"testing"
)

// TestSiLUMulAVX2 checks siluMulAVX2 against siluMulGeneric bit for bit
// on every 613th float32 (both signs: zeros, subnormals, the special
// cases of |n| > 192, infinities, NaNs).
func TestSiLUMulAVX2(t *testing.T) {
	if hostISA < AVX2 {
		t.Skip("no AVX2")
	}
	var gate []float32
	for b := uint64(0); b < 1<<32; b += 613 {
		gate = append(gate, math.Float32frombits(uint32(b)))
	}
	gate = gate[:len(gate)&^15]
	up := make([]float32, len(gate))
	for i := range up {
		up[i] = float32(i%7) - 2.5
	}
	got, want := make([]float32, len(gate)), make([]float32, len(gate))
	siluMulAVX2(&got[0], &gate[0], &up[0], len(gate))
	siluMulGeneric(want, gate, up)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("[%d] gate %g (%#x): got %g, Go %g", i, gate[i], math.Float32bits(gate[i]), got[i], want[i])
		}
	}
}
