package actors_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model/gguf"
)

// TestStartLongRope checks that Start gives a LongRoPE model the rope
// factors llama.cpp takes for the runtime's context: phi4-tiny-long
// (original context 128) takes its long factors when a sequence may use
// more positions, its short ones otherwise.
func TestStartLongRope(t *testing.T) {
	path := filepath.Join(t.TempDir(), "phi4-tiny-long.gguf")
	s, _ := synth.LookupShape("phi4-tiny-long")
	writeSynth(t, path, s, "Q8_0", 1)
	for _, tc := range []struct {
		maxLen int
		long   bool
	}{{256, true}, {128, false}, {0, true}} { // 0: the model's context, 131072
		m := openFile(t, path)
		start(t, m, actors.Config{MaxModelLen: tc.maxLen, NumBlocks: 64, Devices: 1})
		c := &m.Config
		if got := slices.Equal(c.RopeFactors, c.RopeFactorsLong); got != tc.long || c.RopeFactors == nil {
			t.Errorf("max_model_len %d: long factors %v, want %v", tc.maxLen, got, tc.long)
		}
	}
}

// writeSynth writes shape, of the file type typ (synth.LookupFileType's
// name), with stories260K's vocabulary and the given seed, to path.
func writeSynth(t *testing.T, path string, shape synth.Shape, typ string, seed uint64) {
	t.Helper()
	vf, err := gguf.Open(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer vf.Close()
	ft, _ := synth.LookupFileType(typ)
	if _, err := synth.WriteFile(path, synth.Options{Shape: shape, Type: ft, Vocab: vf, Seed: seed, Workers: 1}); err != nil {
		t.Fatal(err)
	}
}
