package compute

import (
	"os"
	"testing"
)

// TestWantISA fails when TROUPE_WANT_ISA names a level other than the one
// the kernels use: make test-arm64 sets it for each qemu CPU model, so that
// an emulator reporting fewer features than assumed cannot quietly test a
// lower level than the run claims.
func TestWantISA(t *testing.T) {
	want := os.Getenv("TROUPE_WANT_ISA")
	if want == "" {
		t.Skip("TROUPE_WANT_ISA not set")
	}
	if got := HostISA().String(); got != want {
		t.Fatalf("kernels run at %s, TROUPE_WANT_ISA is %s", got, want)
	}
}
