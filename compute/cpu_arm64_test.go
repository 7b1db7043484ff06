package compute

import "testing"

// TestARM64ISA checks detectISA's choice from the features x/sys/cpu
// reports, and the dotprod every Apple CPU has when darwin's sysctl does not
// say so.
func TestARM64ISA(t *testing.T) {
	for _, c := range []struct {
		dotprod, i8mm bool
		goos          string
		want          ISA
	}{
		{false, false, "linux", NEON},
		{true, false, "linux", DotProd},
		{true, true, "linux", I8MM},
		{false, true, "linux", NEON}, // i8mm without dotprod: not a level
		{false, false, "darwin", DotProd},
		{false, true, "darwin", I8MM},
	} {
		if got := arm64ISA(c.dotprod, c.i8mm, c.goos); got != c.want {
			t.Errorf("arm64ISA(%v, %v, %s) = %v, want %v", c.dotprod, c.i8mm, c.goos, got, c.want)
		}
	}
}
