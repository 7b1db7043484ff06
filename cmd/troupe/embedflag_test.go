package main

import (
	"testing"

	"github.com/troupe-llm/troupe/model"
)

func TestPoolingFlag(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want model.Pooling
		err  bool
	}{{"", model.PoolingNone, false}, {"mean", model.PoolingMean, false}, {"cls", model.PoolingCLS, false},
		{"last", model.PoolingLast, false}, {"max", 0, true}} {
		var args []string
		if tc.arg != "" {
			args = []string{"--pooling", tc.arg}
		}
		c, err := parseServe(t, args...)
		if (err != nil) != tc.err || (err == nil && c.Runtime.Pooling != tc.want) {
			t.Errorf("--pooling %q: pooling %v, error %v; want %v, error %v", tc.arg, c.Runtime.Pooling, err, tc.want, tc.err)
		}
	}
}
