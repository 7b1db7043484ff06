package main

import (
	"testing"

	"github.com/troupe-llm/troupe/model"
)

// TestPoolingFlag: --pooling lands in the runtime's config as
// model.ParsePooling reads it (its own test covers the names): unset, the
// model's own pooling; a name it refuses is an error.
func TestPoolingFlag(t *testing.T) {
	for arg, want := range map[string]model.Pooling{"": model.PoolingNone, "cls": model.PoolingCLS, "last": model.PoolingLast} {
		var args []string
		if arg != "" {
			args = []string{"--pooling", arg}
		}
		if c, err := parseServe(t, args...); err != nil || c.Runtime.Pooling != want {
			t.Errorf("--pooling %q: %v; want %v", arg, err, want)
		}
	}
	if _, err := parseServe(t, "--pooling", "max"); err == nil {
		t.Error("--pooling max: no error")
	}
}
