package compute

import (
	"math"
	"testing"
)

// TestVExpfLdexp checks vExpf's scaling by 2ⁿ against math.Ldexp's over
// arguments whose n spans the normal, subnormal and overflowing ranges.
func TestVExpfLdexp(t *testing.T) {
	ref := func(x float32) float32 {
		j, n := vExpfParts(x)
		if abs32(n) > 192 {
			if n <= 0 {
				return 0
			}
			return float32(math.Inf(1))
		}
		return float32(math.Ldexp(float64(j), int(n)))
	}
	for x := float32(-140); x < 140; x += 0x1p-10 {
		if got, want := vExpf(x), ref(x); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("vExpf(%g) = %g, want %g", x, got, want)
		}
	}
}
