package actors_test

import (
	"math"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/messages"
)

// TestImageCUDA: images on the CUDA device (or its emulator), the encoder
// on the CPU: an image request answers, its rows are used (another image
// moves the first logprob), its first logprob is the CPU device's within
// float rounding, and it gives the same ids beside text requests and with
// its prefill chunked across the image; rows attending both ways
// (Bidirectional) too.
func TestImageCUDA(t *testing.T) {
	requireCUDA(t)
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	c := loadCases(t, "stories260K")[0]
	before, after := c.PromptIDs, c.GreedyIDs[:9]
	texts := []*messages.GenerateRequest{greedy(c.PromptIDs, 20), greedy(c.GreedyIDs[:12], 20), greedy(c.GreedyIDs[3:30], 20)}
	fake := &fakeEncoder{dim: m.Config.Dim, rows: 11}
	for _, tc := range []struct {
		name   string
		enc    actors.ImageEncoder
		budget int // a token budget that cuts the prefill (not inside a bidirectional image, which it holds)
	}{{"causal", fake, 7}, {"bidirectional", bidiEncoder{fake}, 12}} {
		t.Run(tc.name, func(t *testing.T) {
			gpu := func(cfg actors.Config) *actors.Runtime {
				cfg.Encoder, cfg.NewBackend, cfg.NoPrefixCaching = tc.enc, backend.For(m, backend.DeviceCUDA), true
				rt := start(t, m, cfg)
				if rt.Device() != backend.DeviceCUDA {
					t.Fatalf("the runtime runs on %q", rt.Device())
				}
				return rt
			}
			cpu := start(t, m, actors.Config{Encoder: tc.enc, NoPrefixCaching: true})
			lpCPU, _ := firstLogprob(t, cpu, imageReq(t, cpu, before, after, "image A", 16))
			alone := gpu(actors.Config{})
			lpA, wantA := firstLogprob(t, alone, imageReq(t, alone, before, after, "image A", 16))
			if wantA.finish[0] == messages.FinishError {
				t.Fatalf("image request failed on CUDA: %s", wantA.errs[0])
			}
			lpB, _ := firstLogprob(t, alone, imageReq(t, alone, before, after, "image B", 16))
			if lpA == lpB {
				t.Errorf("two images give the same first logprob %v on CUDA: the rows are not used", lpA)
			}
			t.Logf("first logprob: CUDA %v, CPU %v", lpA, lpCPU)
			if math.Abs(float64(lpA-lpCPU)) > 1e-3 {
				t.Errorf("first logprob on CUDA %v, on the CPU %v", lpA, lpCPU)
			}
			besideText(t, alone, nil, before, after, texts, wantA.ids[0])
			chunked := gpu(actors.Config{MaxNumBatchedTokens: tc.budget})
			if lp, got := firstLogprob(t, chunked, imageReq(t, chunked, before, after, "image A", 16)); lp != lpA || !slices.Equal(got.ids[0], wantA.ids[0]) {
				t.Errorf("chunked on CUDA: first logprob %v, ids %v; unchunked %v, %v", lp, got.ids[0], lpA, wantA.ids[0])
			}
		})
	}
}
