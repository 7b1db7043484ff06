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

// TestAddAVX2 checks Add against the sum of each pair on lengths around
// the vector's eight.
func TestAddAVX2(t *testing.T) {
	for n := range 40 {
		dst, x := make([]float32, n), make([]float32, n)
		for i := range dst {
			dst[i], x[i] = float32(i)*0.37-3, float32(n-i)*1.13
		}
		want := make([]float32, n)
		for i := range want {
			want[i] = dst[i] + x[i]
		}
		Add(dst, x)
		for i := range want {
			if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n %d: [%d] = %g, want %g", n, i, dst[i], want[i])
			}
		}
	}
}
