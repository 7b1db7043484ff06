package actors_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/lora"
)

const loraModel = "stories260K.gguf"

// synthAdapters writes and opens n random adapters for the shared model rel
// (troupe synth --lora-of), seeds 1..n, closed with the test.
func synthAdapters(t *testing.T, rel string, n int) []*lora.Adapter {
	t.Helper()
	var out []*lora.Adapter
	for i := range n {
		out = append(out, synthtest.LoRA(t, testmodels.Path(t, rel), synth.LoRAOptions{Rank: 4, Alpha: 8, Seed: uint64(i + 1)}))
	}
	return out
}

// setsBackend records, per forward pass, how many different adapter sets
// its batch mixed.
type setsBackend struct {
	actors.Backend
	mu    sync.Mutex
	mixed int // most distinct sets seen in one batch
}

func (s *setsBackend) Forward(b *model.Batch, logits []float32) error {
	var seen [][]lora.Scaled
	for _, set := range b.LoRA {
		if !slices.ContainsFunc(seen, func(o []lora.Scaled) bool { return slices.Equal(o, set) }) {
			seen = append(seen, set)
		}
	}
	s.mu.Lock()
	s.mixed = max(s.mixed, len(seen))
	s.mu.Unlock()
	return s.Backend.Forward(b, logits)
}

// TestLoRAMixedBatch: requests with different adapter sets (llama-server's
// lora field), one with none and one with the runtime's default set, run
// together in one batch, each giving exactly the ids it gives alone; the
// adapters change the output, and "lora": [] is the base model.
func TestLoRAMixedBatch(t *testing.T) {
	noLeaks(t)
	m := openModel(t, loraModel)
	ad := synthAdapters(t, loraModel, 2)
	cfg := actors.Config{LoRA: []lora.Scaled{{Adapter: ad[0], Scale: 1}, {Adapter: ad[1], Scale: 0.5}}}
	c := loadCases(t, "stories260K")[0]
	sets := [][]messages.LoRARef{
		{{ID: 0, Scale: 0.75}},
		{{ID: 1, Scale: 1}, {ID: 0, Scale: -0.5}},
		{}, // the base model
		nil,
		{{ID: 1, Scale: 2}, {ID: 0, Scale: 0}},
	}
	var reqs []*messages.GenerateRequest
	for i := range 10 {
		r := greedy(append(slices.Clone(c.PromptIDs), int32(100+i%3)), 20)
		r.LoRA = sets[i%len(sets)]
		reqs = append(reqs, r)
	}
	alone := start(t, m, cfg)
	var want [][]int32
	for _, r := range reqs {
		want = append(want, run(t, alone, copyReq(r)).ids[0])
	}
	base := run(t, start(t, m, actors.Config{}), greedy(reqs[2].Prompt, 20)).ids[0]
	if !slices.Equal(want[2], base) {
		t.Errorf(`"lora": [] differs from a runtime without adapters:\n got %v\nwant %v`, want[2], base)
	}
	for _, i := range []int{0, 1, 3, 4} {
		if slices.Equal(want[i], want[2]) {
			t.Errorf("request %d (lora %v) gives the base model's ids: the adapters did nothing", i, reqs[i].LoRA)
		}
	}

	r := copyReq(reqs[0])
	r.LoRA = []messages.LoRARef{{ID: 0, Scale: 1}}
	if slices.Equal(run(t, alone, r).ids[0], want[0]) {
		t.Errorf("adapter 0 at scale 1 gives the ids of scale 0.75: the scale did nothing")
	}

	be, err := backend.NewCPU(m, 64, 16, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	rec := &setsBackend{Backend: be}
	cfg.Backends, cfg.NumBlocks, cfg.MaxNumBatchedTokens = []actors.Backend{rec}, 64, 24
	_, res := startQueued(t, m, cfg, reqs) // every request queued before the first step
	sameAsAlone(t, res, want)
	if rec.mixed < 3 {
		t.Errorf("at most %d adapter sets in one batch; want the requests mixed (at least 3)", rec.mixed)
	}
	t.Logf("up to %d adapter sets in one batch", rec.mixed)
	for _, mode := range []sched.Preemption{sched.Recompute, sched.Swap} { // preempted sequences keep their sets
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			rt, res := startQueued(t, m, actors.Config{LoRA: cfg.LoRA, NumBlocks: 8, NumHostBlocks: 16, Preemption: mode}, reqs)
			sameAsAlone(t, res, want)
			if st, err := rt.Stats(timeout); err != nil || st.Preemptions == 0 {
				t.Errorf("stats %+v, %v: want preemptions", st, err)
			}
		})
	}
}

// TestLoRAPrefixCache: the same prompt under two adapter sets finds no
// cached block of the other's, but does of its own.
func TestLoRAPrefixCache(t *testing.T) {
	noLeaks(t)
	m := openModel(t, loraModel)
	ad := synthAdapters(t, loraModel, 1)
	rt := start(t, m, actors.Config{LoRA: []lora.Scaled{{Adapter: ad[0], Scale: 1}}})
	c := loadCases(t, "stories260K")[0]
	prompt := append(slices.Clone(c.PromptIDs), c.GreedyIDs...) // 53 tokens: 3 full blocks
	full := len(prompt) / 16 * 16
	for i, tc := range []struct {
		lora   []messages.LoRARef
		cached int
	}{
		{[]messages.LoRARef{{ID: 0, Scale: 1}}, 0},
		{[]messages.LoRARef{{ID: 0, Scale: 0.5}}, 0}, // another set: another scale
		{[]messages.LoRARef{}, 0},                    // the base model
		{nil, full},                                  // the default set: the first one's
		{[]messages.LoRARef{{ID: 0, Scale: 0.5}}, full},
		{[]messages.LoRARef{}, full},
	} {
		r := greedy(prompt, 4)
		r.LoRA = tc.lora
		if got := run(t, rt, r).usage.CachedTokens; got != tc.cached {
			t.Errorf("request %d (lora %v): %d cached tokens, want %d", i, tc.lora, got, tc.cached)
		}
	}
}

// TestLoRARequestErrors: a lora field naming an adapter that is not loaded,
// twice the same one, or a scale out of range is a RequestError naming
// lora[i].id or lora[i].scale.
func TestLoRARequestErrors(t *testing.T) {
	noLeaks(t)
	m := openModel(t, loraModel)
	ad := synthAdapters(t, loraModel, 1)
	rt := start(t, m, actors.Config{LoRA: []lora.Scaled{{Adapter: ad[0], Scale: 1}}})
	none := start(t, m, actors.Config{})
	for _, tc := range []struct {
		name  string
		rt    *actors.Runtime
		lora  []messages.LoRARef
		param string
	}{
		{"unknown id", rt, []messages.LoRARef{{ID: 1, Scale: 1}}, "lora[0].id"},
		{"negative id", rt, []messages.LoRARef{{ID: -1, Scale: 1}}, "lora[0].id"},
		{"twice", rt, []messages.LoRARef{{ID: 0, Scale: 1}, {ID: 0, Scale: 2}}, "lora[1].id"},
		{"scale too big", rt, []messages.LoRARef{{ID: 0, Scale: 11}}, "lora[0].scale"},
		{"scale NaN", rt, []messages.LoRARef{{ID: 0, Scale: float32(math.NaN())}}, "lora[0].scale"},
		{"no adapters loaded", none, []messages.LoRARef{{ID: 0, Scale: 1}}, "lora[0].id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := greedy([]int32{1, 2, 3}, 2)
			r.LoRA = tc.lora
			var re *actors.RequestError
			if err := tc.rt.Check(r); !errors.As(err, &re) || re.Param != tc.param {
				t.Errorf("Check = %v; want a RequestError naming %s", err, tc.param)
			}
		})
	}
	r := greedy([]int32{1, 2, 3}, 2)
	r.LoRA = []messages.LoRARef{{ID: 0, Scale: -10}}
	if err := rt.Check(r); err != nil {
		t.Errorf("scale -10: %v", err)
	}
}

// TestLoRAScales: LoRAAdapters lists the loaded adapters, and
// SetLoRAScales (llama-server's POST /lora-adapters) changes the set of
// requests without a lora field, leaving out adapters at scale 0.
func TestLoRAScales(t *testing.T) {
	noLeaks(t)
	m := openModel(t, loraModel)
	ad := synthAdapters(t, loraModel, 2)
	rt := start(t, m, actors.Config{LoRA: []lora.Scaled{{Adapter: ad[0], Scale: 1}, {Adapter: ad[1], Scale: 0.5}}})
	want := []actors.LoRAAdapter{{ID: 0, Path: ad[0].Path, Scale: 1}, {ID: 1, Path: ad[1].Path, Scale: 0.5}}
	if got := rt.LoRAAdapters(); !slices.Equal(got, want) {
		t.Errorf("LoRAAdapters = %+v, want %+v", got, want)
	}
	prompt := loadCases(t, "stories260K")[0].PromptIDs
	ids := func(set []messages.LoRARef) []int32 {
		r := greedy(prompt, 16)
		r.LoRA = set
		return run(t, rt, r).ids[0]
	}
	both, one, base := ids(nil), ids([]messages.LoRARef{{ID: 1, Scale: 2}}), ids([]messages.LoRARef{})
	if err := rt.SetLoRAScales([]messages.LoRARef{{ID: 1, Scale: 2}}); err != nil {
		t.Fatal(err)
	}
	if got := rt.LoRAAdapters(); got[0].Scale != 0 || got[1].Scale != 2 {
		t.Errorf("after SetLoRAScales: %+v, want scales 0 and 2", got)
	}
	if got := ids(nil); !slices.Equal(got, one) || slices.Equal(got, both) {
		t.Errorf("default set after SetLoRAScales: %v, want %v (adapter 1 at 2), not %v", got, one, both)
	}
	if err := rt.SetLoRAScales(nil); err != nil {
		t.Fatal(err)
	}
	if got := ids(nil); !slices.Equal(got, base) {
		t.Errorf("every scale 0: %v, want the base model's %v", got, base)
	}
	var re *actors.RequestError
	if err := rt.SetLoRAScales([]messages.LoRARef{{ID: 2, Scale: 1}}); !errors.As(err, &re) || re.Param != "lora[0].id" {
		t.Errorf("SetLoRAScales of adapter 2 = %v, want a RequestError naming lora[0].id", err)
	}
}
