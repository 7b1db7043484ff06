package actors_test

import (
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
)

// TestStartLongRope checks that Start gives a LongRoPE model the rope
// factors llama.cpp takes for the runtime's context: phi4-tiny-long
// (original context 128) takes its long factors when a sequence may use
// more positions, its short ones otherwise.
func TestStartLongRope(t *testing.T) {
	path := synthtest.Write(t, "phi4-tiny-long", "Q8_0", "stories260K.gguf", 1)
	for _, tc := range []struct {
		maxLen int
		long   bool
	}{{256, true}, {128, false}, {0, true}} { // 0: the model's context, 131072
		m := reftest.Open(t, path)
		start(t, m, actors.Config{MaxModelLen: tc.maxLen, NumBlocks: 64, Devices: 1})
		c := &m.Config
		if got := slices.Equal(c.RopeFactors, c.RopeFactorsLong); got != tc.long || c.RopeFactors == nil {
			t.Errorf("max_model_len %d: long factors %v, want %v", tc.maxLen, got, tc.long)
		}
	}
}
