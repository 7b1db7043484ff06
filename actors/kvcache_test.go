package actors_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// TestSwapRoundTrip: for each cache type, a sequence's blocks swapped out
// to the host tier and back into other device blocks give the next token
// the same logits, bit for bit, as the blocks that never moved.
func TestSwapRoundTrip(t *testing.T) {
	m := openModel(t, "synthetic/synth-qwen2-tiny256-Q8_0.gguf")
	c := loadCases(t, "synth-qwen2-tiny256-Q8_0")[0]
	ids := append(append([]int32(nil), c.PromptIDs...), c.GreedyIDs...)[:40] // 3 blocks
	for _, typ := range []kv.CacheType{kv.F16, kv.Q8_0} {
		t.Run(typ.String(), func(t *testing.T) {
			be, err := backend.NewCPUWithCache(m, typ, 8, 16, 4, 1)
			if err != nil {
				t.Fatal(err)
			}
			vocab := m.Config.VocabSize
			forward := func(table []int32, from, to int) []float32 {
				var b model.Batch
				b.BlockTables = append(b.BlockTables, table)
				for p := from; p < to; p++ {
					b.Add(ids[p], int32(p), 0, p == to-1)
				}
				logits := make([]float32, vocab)
				if err := be.Forward(&b, logits); err != nil {
					t.Fatal(err)
				}
				return logits
			}
			forward([]int32{0, 1, 2}, 0, 39)
			if err := be.SwapOut([]messages.BlockCopy{{Src: 0, Dst: 3}, {Src: 1, Dst: 1}, {Src: 2, Dst: 0}}); err != nil {
				t.Fatal(err)
			}
			if err := be.SwapIn([]messages.BlockCopy{{Src: 3, Dst: 5}, {Src: 1, Dst: 7}, {Src: 0, Dst: 4}}); err != nil {
				t.Fatal(err)
			}
			// Position 39 goes into block 2 and 4 alike (the same values).
			want := forward([]int32{0, 1, 2}, 39, 40)
			got := forward([]int32{5, 7, 4}, 39, 40)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("logit %d after the round trip: %g, in place %g", i, got[i], want[i])
				}
			}
		})
	}
}

// TestPreemptionQ8_0: on a Q8_0 cache, 16 concurrent requests with a pool
// too small for them all (preempted by recompute, or swapped out and in)
// give exactly the ids each gives alone on a Q8_0 cache.
func TestPreemptionQ8_0(t *testing.T) {
	noLeaks(t)
	for _, tm := range []struct{ path, reference string }{
		{"synthetic/synth-llama-tiny256-Q4_K_M.gguf", "synth-llama-tiny256-Q4_K_M"},
		{"synthetic/synth-qwen2-tiny256-Q8_0.gguf", "synth-qwen2-tiny256-Q8_0"},
		{"synthetic-more/synth-llama-hd64-Q8_0.gguf", "synth-llama-hd64-Q8_0"}, // the Hadamard rotations
	} {
		m := openModel(t, tm.path)
		reqs := workload(loadCases(t, tm.reference))
		alone := start(t, m, actors.Config{KVCacheType: kv.Q8_0})
		var want [][]int32
		for _, req := range reqs {
			want = append(want, run(t, alone, copyReq(req)).ids[0])
		}
		for _, mode := range []sched.Preemption{sched.Recompute, sched.Swap} {
			t.Run(fmt.Sprintf("%s/%s", tm.reference, mode), func(t *testing.T) {
				rt := start(t, m, actors.Config{NumBlocks: 12, NumHostBlocks: 16, Preemption: mode, KVCacheType: kv.Q8_0})
				sameAsAlone(t, concurrently(t, rt, reqs), want)
				st := stats(t, rt)
				t.Logf("preemptions %d, swap-outs %d, swap-ins %d, steps %d", st.Preemptions, st.SwapOuts, st.SwapIns, st.Steps)
				if st.Preemptions == 0 || mode == sched.Swap && (st.SwapOuts == 0 || st.SwapIns == 0) {
					t.Errorf("%d preemptions, %d swap-outs, %d swap-ins: the test means nothing", st.Preemptions, st.SwapOuts, st.SwapIns)
				}
			})
		}
	}
}

// TestKVCacheTypeConfig: a q8_0 cache on a model whose head size is not a
// multiple of 32 is refused with an error, and the KV bytes follow the
// type.
func TestKVCacheTypeConfig(t *testing.T) {
	m := openModel(t, "stories260K.gguf") // head_dim 8
	if _, err := backend.NewCPUWithCache(m, kv.Q8_0, 4, 16, 0, 1); err == nil {
		t.Error("q8_0 cache with head_dim 8: no error")
	}
	cfg := actors.Config{NumBlocks: 10, BlockSize: 16}
	c := &m.Config
	f16 := cfg.KVCacheBytes(c)
	if want := int64(10 * 16 * 2 * c.Layers * c.KVDim() * 2); f16 != want {
		t.Errorf("f16: %d bytes, want %d", f16, want)
	}
	m2 := openModel(t, "synthetic/synth-qwen2-tiny256-Q8_0.gguf")
	c2 := &m2.Config
	cfg.KVCacheType = kv.Q8_0
	if got, want := cfg.KVCacheBytes(c2), int64(10*16*2*c2.Layers*c2.KVDim()/32*34); got != want {
		t.Errorf("q8_0: %d bytes, want %d", got, want)
	}
}

// TestKVCacheTypeCUDA: the CUDA device (or its emulator) refuses a q8_0
// cache with an error that says so.
func TestKVCacheTypeCUDA(t *testing.T) {
	requireCUDA(t)
	m := openModel(t, "synthetic/synth-qwen2-tiny256-Q8_0.gguf")
	_, err := actors.Start(newSystem(t), m, actors.Config{NewBackend: backend.For(m, backend.DeviceCUDA), KVCacheType: kv.Q8_0})
	if err == nil || !strings.Contains(err.Error(), "f16 only") {
		t.Errorf("q8_0 on CUDA: error %v, want one saying f16 only", err)
	}
}
