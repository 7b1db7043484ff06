package compute

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGelu checks Gelu against GeGLU of the same values with ones bit for
// bit: normal values, half subnormals and overflows, the ±10 bounds,
// zeros, infinities and a NaN.
func TestGelu(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	x := []float32{-10, 10, -9.999, 9.999, -10.001, 10.001, 0, float32(math.Copysign(0, -1)), 1e-8, -3e-7, 6e-5, 65504, 65520, 7e4,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1, -1, 0.5}
	for range 100000 {
		v := float32(r.NormFloat64() * 4)
		if r.IntN(4) == 0 {
			v = float32(r.NormFloat64() * 1e-5)
		}
		x = append(x, v)
	}
	ones := make([]float32, len(x))
	for i := range ones {
		ones[i] = 1
	}
	want := make([]float32, len(x))
	GeGLU(want, x, ones)
	got := append([]float32(nil), x...)
	Gelu(got)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("Gelu(%g) = %g (%#x), want %g (%#x)", x[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func BenchmarkGelu(b *testing.B) {
	x := normals(4096, 7, 8, 4)
	ones := make([]float32, len(x))
	for i := range ones {
		ones[i] = 1
	}
	b.Run("vec", func(b *testing.B) { benchInPlace(b, x, Gelu) })
	b.Run("geglu", func(b *testing.B) { benchInPlace(b, x, func(y []float32) { GeGLU(y, y, ones) }) })
}

// TestHalfTableLookup checks HalfTable.Lookup, assembly and tail, against
// the scalar look-up bit for bit: every half widened, random normal and
// tiny values, infinities and a NaN, over a length that leaves a tail.
func TestHalfTableLookup(t *testing.T) {
	tab := MakeHalfTable(func(v float32) float32 { return v * (1 / (1 + Expf(-1.702*v))) })
	r := rand.New(rand.NewPCG(9, 10))
	x := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 7e4, -65520}
	for h := range 1 << 16 {
		x = append(x, FP16ToFP32(uint16(h)))
	}
	for range 50001 {
		x = append(x, float32(r.NormFloat64()*3), float32(r.NormFloat64()*1e-6))
	}
	got := append([]float32(nil), x...)
	tab.Lookup(got)
	for i, v := range x {
		want := FP16ToFP32(tab[FP32ToFP16(v)])
		if math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("x[%d] = %g (%#x): got %#x, want %#x", i, v, math.Float32bits(v), math.Float32bits(got[i]), math.Float32bits(want))
		}
	}
}
