package actors_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/vision"
)

// qwenVL is model's TestVisionLogitsParityMRoPE's pair: qwen2vl-tiny (F32,
// stories260K's vocabulary, seed 11) and a qwen2.5vl-tiny projector of its
// width (seed 1).
func qwenVL(t *testing.T) (*model.Model, *vision.Projector) {
	t.Helper()
	return qwenVLPair(t, "qwen2vl-tiny", "qwen2.5vl-tiny")
}

// qwenVLPair is the text model textShape (F32, stories260K's vocabulary,
// seed 11) and a projShape projector of its width (seed 1).
func qwenVLPair(t *testing.T, textShape, projShape string) (*model.Model, *vision.Projector) {
	t.Helper()
	m := reftest.Open(t, synthtest.Write(t, textShape, "F32", "stories260K.gguf", 11))
	return m, synthtest.Projector(t, projShape, m.Config.Dim, 1)
}

// TestImageMRoPE: a Qwen2.5-VL prompt through the runtime (Prepare, the
// encoder actor, M-RoPE positions from ImageInput.Positions in each step)
// gives llama.cpp's mtmd greedy ids (model/vision/testdata/logits: the
// prompt's layout, -1 at the image rows, and the 8 ids after it) and its
// first token's logprob; the same ids with the prefill cut across the
// image beside text requests, under recompute preemption, and again from
// the prefix cache. A projector and a model that disagree
// on M-RoPE are refused at Start.
func TestImageMRoPE(t *testing.T) {
	noLeaks(t)
	m, proj := qwenVL(t)
	// Measured off by 4.1e-4, and by 5.2e-3 with plain positions (the
	// steps without RopePositions).
	imageMRoPE(t, m, proj, "qwen2vl-tiny-qwen2.5vl-tiny", 1.5e-3)

	// Disagreeing pairs.
	sys := newSystem(t)
	stories := openModel(t, "stories260K.gguf")
	proj64 := synthtest.Projector(t, "qwen2.5vl-tiny", stories.Config.Dim, 1)
	for _, tc := range []struct {
		name string
		m    *model.Model
		enc  actors.ImageEncoder
	}{
		{"stories260K+qwen2.5vl", stories, proj64},
		{"qwen2vl+fake", m, &fakeEncoder{dim: m.Config.Dim, rows: 3}},
	} {
		if _, err := actors.Start(sys, tc.m, actors.Config{Encoder: tc.enc, NewBackend: backend.For(tc.m, backend.DeviceCPU)}); err == nil || !strings.Contains(err.Error(), "M-RoPE") {
			t.Errorf("%s: %v, want an M-RoPE mismatch", tc.name, err)
		}
	}
}

// TestImageQwen2VL is TestImageMRoPE's runtime checks for a Qwen2-VL
// projector (qwen2vl-tiny with the qwen2vl-tiny text model).
func TestImageQwen2VL(t *testing.T) {
	noLeaks(t)
	m, proj := qwenVLPair(t, "qwen2vl-tiny", "qwen2vl-tiny")
	imageMRoPE(t, m, proj, "qwen2vl-tiny-qwen2vl-tiny", 1.5e-3)
}

// TestImageQwen3VL is TestImageMRoPE for Qwen3-VL (qwen3vl-tiny and its
// projector: interleaved M-RoPE, image rows of 3·256 values carrying two
// deepstack slices through the runtime to the model); a Qwen2.5-VL
// projector (rows of 256) is refused at Start by the qwen3vl model, and
// the Qwen3-VL projector by the qwen2vl model, naming the input width.
func TestImageQwen3VL(t *testing.T) {
	noLeaks(t)
	m, proj := qwenVLPair(t, "qwen3vl-tiny", "qwen3vl-tiny")
	imageMRoPE(t, m, proj, "qwen3vl-tiny-qwen3vl-tiny", 1.5e-3) // measured off by 4.7e-4

	sys := newSystem(t)
	m2, proj25 := qwenVL(t)
	for _, tc := range []struct {
		name string
		m    *model.Model
		enc  actors.ImageEncoder
	}{{"qwen3vl+qwen2.5vl", m, proj25}, {"qwen2vl+qwen3vl", m2, proj}} {
		if _, err := actors.Start(sys, tc.m, actors.Config{Encoder: tc.enc, NewBackend: backend.For(tc.m, backend.DeviceCPU)}); err == nil || !strings.Contains(err.Error(), "input width") {
			t.Errorf("%s: %v, want an input width mismatch", tc.name, err)
		}
	}
}

// imageMRoPE is TestImageMRoPE's runtime checks of m with proj against
// the logits reference name: greedy ids, the first token's logprob within
// lpBound, the same ids chunked, cached and under preemption.
func imageMRoPE(t *testing.T, m *model.Model, proj *vision.Projector, name string, lpBound float64) {
	t.Helper()
	ref := filepath.Join("..", "model", "vision", "testdata", "logits", name)
	ids, gen := readInt32s(t, ref+".ids"), readInt32s(t, ref+".gen")
	data, err := os.ReadFile(filepath.Join("..", "model", "vision", "testdata", "img", "wide.png"))
	if err != nil {
		t.Fatal(err)
	}
	req := func(rt *actors.Runtime) *messages.GenerateRequest {
		pi, err := rt.PrepareImage(data)
		if err != nil {
			t.Fatal(err)
		}
		at := slices.Index(ids, -1)
		rows := pi.Chunks[1].Rows
		prompt := slices.Clone(ids)
		for i := at; i < at+rows; i++ {
			prompt[i] = 1 // a placeholder
		}
		r := greedy(prompt, len(gen))
		r.Sampling.WantLogprob = true
		r.Images = []messages.ImageInput{{Pos: at, Rows: rows, Hash: pi.Hash, Image: pi}}
		return r
	}
	alone := start(t, m, actors.Config{Encoder: proj, NoPrefixCaching: true})
	lp, got := firstLogprob(t, alone, req(alone))
	if got.finish[0] == messages.FinishError || !slices.Equal(got.ids[0], gen) {
		t.Fatalf("greedy ids %v (%s), llama.cpp's %v", got.ids[0], got.errs[0], gen)
	}
	// The first token's logprob against llama.cpp's last text row: the
	// greedy ids alone do not tell M-RoPE positions from plain ones on
	// this tiny model, the logprob does.
	logits := readFloat32s(t, ref+".logits")
	last := logits[len(logits)-m.Config.VocabSize:]
	mx := slices.Max(last)
	var sum float64
	for _, v := range last {
		sum += math.Exp(float64(v - mx))
	}
	want := float64(last[gen[0]]-mx) - math.Log(sum)
	t.Logf("first token's logprob %.5f, llama.cpp's %.5f", lp, want)
	if d := math.Abs(float64(lp) - want); d > lpBound {
		t.Errorf("first token's logprob %.5f, llama.cpp's %.5f: off by %.2e", lp, want, d)
	}

	text := ids[:slices.Index(ids, -1)]
	texts := []*messages.GenerateRequest{greedy(text, 12), greedy(slices.Concat(text, gen), 12)}
	for _, tc := range []struct {
		name string
		cfg  actors.Config
	}{
		{"chunked", actors.Config{Encoder: proj, MaxNumBatchedTokens: 7, NoPrefixCaching: true}},
		{"cached", actors.Config{Encoder: proj}},
		{"recompute", actors.Config{Encoder: proj, NumBlocks: 20, BlockSize: 4, MaxNumBatchedTokens: 16, NoPrefixCaching: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, release := holdDevices(m, tc.cfg) // every request queued before the first step
			rt := start(t, m, cfg)
			var reqs []*messages.GenerateRequest
			for _, tr := range texts {
				reqs = append(reqs, req(rt), copyReq(tr))
			}
			for i, r := range runQueued(t, rt, reqs, release) {
				if i%2 == 0 && (r.finish[0] == messages.FinishError || !slices.Equal(r.ids[0], gen)) {
					t.Errorf("image request %d beside text: %v (%s), llama.cpp's %v", i/2, r.ids[0], r.errs[0], gen)
				}
			}
			if tc.cfg.NumBlocks > 0 {
				if st, err := rt.Stats(timeout); err != nil || st.Preemptions == 0 {
					t.Errorf("no preemption (%v): the pool is not small enough for the case to mean anything", err)
				}
			}
			if tc.cfg.NoPrefixCaching {
				return
			}
			_, again := firstLogprob(t, rt, req(rt))
			if !slices.Equal(again.ids[0], gen) || again.usage.CachedTokens < len(ids)/2 {
				t.Errorf("again: %v with %d cached tokens, want %v from the cache", again.ids[0], again.usage.CachedTokens, gen)
			}
		})
	}

}

// readFloat32s reads a file of little-endian float32s.
func readFloat32s(t *testing.T, path string) []float32 {
	t.Helper()
	ints := readInt32s(t, path)
	out := make([]float32, len(ints))
	for i, v := range ints {
		out[i] = math.Float32frombits(uint32(v))
	}
	return out
}

// readInt32s reads a file of little-endian int32s.
func readInt32s(t *testing.T, path string) []int32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
