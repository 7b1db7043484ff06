package model_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/model"
)

// TestRepackModes loads a Q4_K_M mixture of experts with every weight
// repacked, with the experts read in place, and with nothing repacked, and
// checks that the teacher-forced logits are the same bits; and that
// RepackAuto keeps everything repacked with memory to spare and reads the
// experts in place without.
func TestRepackModes(t *testing.T) {
	path := synthtest.Write(t, "qwen3moe-tiny", "Q4_K_M", "stories260K.gguf", 3)
	rng := rand.New(rand.NewPCG(5, 6))
	var ids []int32
	var want []float32
	for _, c := range []struct {
		o    model.LoadOptions
		want model.Repack
	}{
		{model.LoadOptions{Repack: model.RepackAll}, model.RepackAll},
		{model.LoadOptions{Repack: model.RepackDense}, model.RepackDense},
		{model.LoadOptions{Repack: model.RepackNone}, model.RepackNone},
		{model.LoadOptions{Available: 1 << 40}, model.RepackAll},
		{model.LoadOptions{Available: 2 << 20}, model.RepackDense}, // the file is 4.4 MB, most of it experts
		{model.LoadOptions{Available: 1 << 10}, model.RepackNone},
	} {
		m, _, err := model.LoadGGUFWith(path, c.o)
		if err != nil {
			t.Fatal(err)
		}
		if m.Weights.Repack != c.want {
			t.Errorf("%+v: weights bound %v, want %v", c.o, m.Weights.Repack, c.want)
		}
		if ids == nil {
			ids = randomTokens(rng, 24, m.Config.VocabSize)
		}
		got := teacherForced(t, m, 8, ids)
		m.Close()
		if want == nil {
			want = got
			continue
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: logit %d is %g, with every weight repacked %g", c.o, i, got[i], want[i])
			}
		}
	}
}
