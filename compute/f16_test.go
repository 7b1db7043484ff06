package compute

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestFP16ToFP32Values(t *testing.T) {
	tests := []struct {
		name string
		h    uint16
		want uint32 // float32 bits
	}{
		{"zero", 0x0000, 0x00000000},
		{"negative zero", 0x8000, 0x80000000},
		{"one", 0x3c00, math.Float32bits(1)},
		{"minus two", 0xc000, math.Float32bits(-2)},
		{"third", 0x3555, math.Float32bits(0.333251953125)},
		{"max", 0x7bff, math.Float32bits(65504)},
		{"smallest normal", 0x0400, math.Float32bits(0x1p-14)},
		{"smallest subnormal", 0x0001, math.Float32bits(0x1p-24)},
		{"largest subnormal", 0x03ff, math.Float32bits(1023 * 0x1p-24)},
		{"negative subnormal", 0x8200, math.Float32bits(-0x1p-15)},
		{"+inf", 0x7c00, 0x7f800000},
		{"-inf", 0xfc00, 0xff800000},
		{"quiet NaN", 0x7e00, 0x7fc00000},
		{"signalling NaN is quieted, payload kept", 0x7c01, 0x7fc02000},
		{"negative NaN", 0xfe01, 0xffc02000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := math.Float32bits(FP16ToFP32(tt.h)); got != tt.want {
				t.Errorf("FP16ToFP32(%#04x) = %#08x, want %#08x", tt.h, got, tt.want)
			}
		})
	}
}

// halfValue is the exact value of a non-NaN half, computed in float64.
func halfValue(h uint16) float64 {
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	var v float64
	switch exp {
	case 0x1f:
		v = math.Inf(1)
	case 0:
		v = math.Ldexp(mant, -24)
	default:
		v = math.Ldexp(1+mant/1024, exp-15)
	}
	if h&0x8000 != 0 {
		v = -v
	}
	return v
}

func isHalfNaN(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }

func TestFP16AllValues(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := FP16ToFP32(h)
		if isHalfNaN(h) {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("FP16ToFP32(%#04x) = %v, want NaN", h, f)
			}
			if got, want := FP32ToFP16(f), h&0x8000|0x7e00; got != want {
				t.Fatalf("FP32ToFP16(NaN from %#04x) = %#04x, want %#04x", h, got, want)
			}
			continue
		}
		want := halfValue(h)
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("FP16ToFP32(%#04x) = %v, want %v", h, f, want)
		}
		if got := FP32ToFP16(f); got != h {
			t.Fatalf("FP32ToFP16(FP16ToFP32(%#04x)) = %#04x", h, got)
		}
	}
}

// refFP32ToFP16 rounds f to a half by searching the sorted positive halves:
// nearest value, ties to the even bit pattern, and +inf standing at 2^16 as
// the next step past 65504 (IEEE rounding with an unbounded exponent).
func refFP32ToFP16(f float32) uint16 {
	if math.IsNaN(float64(f)) {
		return uint16(math.Float32bits(f)>>16)&0x8000 | 0x7e00
	}
	sign := uint16(math.Float32bits(f)>>16) & 0x8000
	a := math.Abs(float64(f))
	value := func(h uint16) float64 {
		if h == 0x7c00 {
			return 65536
		}
		return halfValue(h)
	}
	// Largest h in [0, 0x7c00] with value(h) <= a.
	h := uint16(sort.Search(0x7c01, func(i int) bool { return value(uint16(i)) > a }) - 1)
	if h == 0x7c00 {
		return sign | h
	}
	lo, hi := a-value(h), value(h+1)-a
	if hi < lo || (hi == lo && h&1 == 1) {
		h++
	}
	return sign | h
}

func TestFP32ToFP16RoundsToNearestEven(t *testing.T) {
	check := func(f float32) {
		t.Helper()
		if got, want := FP32ToFP16(f), refFP32ToFP16(f); got != want {
			t.Fatalf("FP32ToFP16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	for _, f := range []float32{0, 65504, 65519.99, 65520, 65536, 1e9, 0x1p-25, 0x1p-26, 0x1.8p-25,
		math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0x7f800001)} {
		check(f)
		check(-f)
	}
	// Every tie between neighbouring halves, and one float32 step either side.
	for h := uint16(0); h < 0x7c00; h++ {
		mid := float32((halfValue(h) + halfValue(h+1)) / 2) // exact: 12 significant bits
		for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, math.MaxFloat32)} {
			check(f)
			check(-f)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		check(math.Float32frombits(rng.Uint32()))
	}
	for range 1 << 18 { // concentrated on the half range
		check(float32(rng.NormFloat64() * 1000))
	}
}

func TestBF16(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := BF16ToFP32(h)
		if got := math.Float32bits(f); got != uint32(h)<<16 {
			t.Fatalf("BF16ToFP32(%#04x) bits = %#08x", h, got)
		}
		if math.IsNaN(float64(f)) {
			if got := FP32ToBF16(f); got != h|0x40 {
				t.Fatalf("FP32ToBF16(NaN %#04x) = %#04x, want %#04x", h, got, h|0x40)
			}
			continue
		}
		if got := FP32ToBF16(f); got != h {
			t.Fatalf("FP32ToBF16(BF16ToFP32(%#04x)) = %#04x", h, got)
		}
	}

	tests := []struct {
		name string
		f    uint32
		want uint16
	}{
		{"tie to even, stays", 0x3f808000, 0x3f80},
		{"tie to even, rounds up", 0x3f818000, 0x3f82},
		{"above tie", 0x3f808001, 0x3f81},
		{"below tie", 0x3f807fff, 0x3f80},
		{"overflow to inf", 0x7f7fffff, 0x7f80},
		{"negative overflow", 0xff7fffff, 0xff80},
		{"signalling NaN quieted", 0x7f800001, 0x7fc0},
		{"NaN payload kept", 0xff810000, 0xffc1},
		{"subnormal", 0x00008000, 0x0000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FP32ToBF16(math.Float32frombits(tt.f)); got != tt.want {
				t.Errorf("FP32ToBF16(%#08x) = %#04x, want %#04x", tt.f, got, tt.want)
			}
		})
	}
}

// refFP32ToBF16 picks the nearer of the two bfloat16 neighbours of a finite
// f, ties to even, with +inf counting as 2^128.
func refFP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign, a := uint16(u>>16)&0x8000, u&0x7fffffff
	value := func(h uint16) float64 {
		if h == 0x7f80 {
			return 0x1p128
		}
		return float64(BF16ToFP32(h))
	}
	lo := uint16(a >> 16)
	x := float64(math.Float32frombits(a))
	dlo, dhi := x-value(lo), value(lo+1)-x
	if dhi < dlo || (dhi == dlo && lo&1 == 1) {
		lo++
	}
	return sign | lo
}

func TestFP32ToBF16Random(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1 << 20 {
		f := math.Float32frombits(rng.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		if got, want := FP32ToBF16(f), refFP32ToBF16(f); got != want {
			t.Fatalf("FP32ToBF16(%#08x) = %#04x, want %#04x", math.Float32bits(f), got, want)
		}
	}
}

// TestRoundF16s checks the vector rounding against RoundF16 on every 97th
// float32 bit pattern (NaNs only as NaNs) and on slices of every length
// up to 17 (the tail past the last multiple of 8).
func TestRoundF16s(t *testing.T) {
	sweepF16(t, RoundF16s, func(src, dst []float32) {
		t.Helper()
		for i, v := range src {
			want := RoundF16(v)
			if got := dst[i]; math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("RoundF16s(%g = %#08x) = %g, RoundF16 %g", v, math.Float32bits(v), got, want)
			}
		}
	})
}

// sweepF16 runs a vector conversion to half precision on every 97th
// float32 bit pattern, then on slices of every length up to 17 (the tail
// past the last multiple of 8), handing each source and result to check.
func sweepF16[T any](t *testing.T, conv func(dst []T, src []float32), check func(src []float32, dst []T)) {
	t.Helper()
	const chunk = 1 << 16
	src, dst := make([]float32, chunk), make([]T, chunk)
	for b := uint64(0); b < 1<<32; b += 97 * chunk {
		for i := range src {
			src[i] = math.Float32frombits(uint32(b + uint64(i)*97))
		}
		conv(dst, src)
		check(src, dst)
	}
	for n := range 18 {
		s := []float32{65504, 65520, 5.9604645e-08, 2.9802322e-08, -1e-9, 1.0009765625, -0.33333334, 3e38, float32(math.Inf(-1))}
		s = append(s, s...)[:n]
		d := make([]T, n)
		conv(d, s)
		check(s, d)
	}
}
