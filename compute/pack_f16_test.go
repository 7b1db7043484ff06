package compute

import (
	"math"
	"testing"
)

// TestHalfToFloat checks the fast conversion against the table for every
// half.
func TestHalfToFloat(t *testing.T) {
	for h := range 1 << 16 {
		got, want := halfToFloat(uint16(h)), fp16Table[h]
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("halfToFloat(%#04x) = %v, want %v", h, got, want)
		}
	}
}
