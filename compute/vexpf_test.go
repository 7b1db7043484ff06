package compute

import (
	"math"
	"testing"
)

// TestVExpfLdexp checks vExpf's scaling by 2ⁿ against math.Ldexp's over
// arguments whose n spans the normal, subnormal and overflowing ranges.
func TestVExpfLdexp(t *testing.T) {
	ref := func(x float32) float32 {
		const r = 0x1.8p23
		z := fma32(x, 0x1.715476p+0, r)
		n := z - r
		b := fma32(-n, 0x1.7f7d1cp-20, fma32(-n, 0x1.62e4p-1, x))
		if abs32(n) > 192 {
			if n <= 0 {
				return 0
			}
			return float32(math.Inf(1))
		}
		u := b * b
		j := fma32(fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u,
			fma32(0x1.ffffecp-1, b, 1))
		return float32(math.Ldexp(float64(j), int(n)))
	}
	for x := float32(-140); x < 140; x += 0x1p-10 {
		if got, want := vExpf(x), ref(x); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("vExpf(%g) = %g, want %g", x, got, want)
		}
	}
}
