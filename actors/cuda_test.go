package actors_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/internal/cudaemu"
)

// requireCUDA skips t unless the CUDA device, or the emulator (see
// main_test.go), is there; under CI=true cudaemu.Require fails it instead.
func requireCUDA(t *testing.T) {
	t.Helper()
	cudaemu.Require(t)
	if err := cuda.Available(); err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
}

// TestCUDA runs the runtime on the CUDA device, or on the CUDA emulator
// where there is none (see main_test.go): 16 concurrent greedy requests give
// the ids each gives alone on the GPU, llama.cpp's greedy ids on the
// comfortable reference cases, and the same ids again with a KV pool too
// small for all of them, preempting by recompute and by swap.
func TestCUDA(t *testing.T) {
	requireCUDA(t)
	noLeaks(t)
	for _, tm := range invarianceModels {
		t.Run(tm.reference, func(t *testing.T) {
			if cudaemu.Active() && !emuModels[tm.reference] {
				t.Skip("the CUDA emulator takes minutes a model here; gpu's tests run every model on it")
			}
			m := openModel(t, tm.path)
			cases := loadCases(t, tm.reference)
			alone := start(t, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCUDA)})
			for _, k := range tm.comfortable {
				r := run(t, alone, greedy(cases[k].PromptIDs, len(cases[k].GreedyIDs)))
				if !slices.Equal(r.ids[0], cases[k].GreedyIDs) {
					t.Errorf("case %d: greedy ids differ from llama.cpp\n got %v\nwant %v", k, r.ids[0], cases[k].GreedyIDs)
				}
			}
			reqs := workload(cases)
			var want [][]int32
			for _, req := range reqs {
				want = append(want, run(t, alone, copyReq(req)).ids[0])
			}
			rt := start(t, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCUDA), MaxNumBatchedTokens: 24})
			sameAsAlone(t, concurrently(t, rt, reqs), want)
			for _, mode := range []sched.Preemption{sched.Recompute, sched.Swap} {
				t.Run(fmt.Sprint(mode), func(t *testing.T) {
					rt := start(t, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCUDA), NumBlocks: 12, NumHostBlocks: 16, Preemption: mode})
					sameAsAlone(t, concurrently(t, rt, reqs), want)
					st := stats(t, rt)
					t.Logf("preemptions %d, swap-outs %d, swap-ins %d", st.Preemptions, st.SwapOuts, st.SwapIns)
					if st.Preemptions == 0 || mode == sched.Swap && st.SwapIns == 0 {
						t.Error("the pool was not small enough to preempt (and swap)")
					}
				})
			}
		})
	}
}

// emuModels are the models TestCUDA runs on the CUDA emulator, which is
// slow: the real ones, an F32 and a Q8_0 model.
var emuModels = map[string]bool{"stories260K": true, "TinyStories-656K-Q8_0": true}
