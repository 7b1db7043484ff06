package testmodels

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records how the test ended instead of ending it.
type recorder struct {
	testing.TB
	failed, skipped bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(r) }
func (r *recorder) Skipf(string, ...any)  { r.skipped = true; panic(r) }
func run(r *recorder, f func(testing.TB)) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	f(r)
}

func TestPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.gguf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TROUPE_TEST_MODELS", dir)
	for _, tc := range []struct {
		name, rel, ci      string
		wantFail, wantSkip bool
	}{
		{"present", "m.gguf", "true", false, false},
		{"missing in CI", "x.gguf", "true", true, false},
		{"missing locally", "x.gguf", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			var got string
			run(r, func(tb testing.TB) { got = Path(tb, tc.rel) })
			if r.failed != tc.wantFail || r.skipped != tc.wantSkip {
				t.Fatalf("failed=%v skipped=%v, want %v %v", r.failed, r.skipped, tc.wantFail, tc.wantSkip)
			}
			if !tc.wantFail && !tc.wantSkip && got != filepath.Join(dir, tc.rel) {
				t.Fatalf("Path = %q", got)
			}
		})
	}
}

func TestDirMissing(t *testing.T) {
	t.Setenv("TROUPE_TEST_MODELS", filepath.Join(t.TempDir(), "nope"))
	t.Setenv("CI", "true")
	r := &recorder{TB: t}
	run(r, func(tb testing.TB) { Dir(tb) })
	if !r.failed {
		t.Fatal("Dir with a missing directory under CI did not fail")
	}
}
