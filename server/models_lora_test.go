package server_test

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/server"
)

// synthAdapters writes n random adapters for the model file base (ranks
// 2, 4, 8, ... and seeds 1, 2, 3, ..., alpha 4·rank) and returns their
// paths.
func synthAdapters(t *testing.T, base string, n int) []string {
	return synthAdaptersAlpha(t, base, n, 4)
}

// synthAdaptersAlpha is synthAdapters with alpha k·rank.
func synthAdaptersAlpha(t *testing.T, base string, n, k int) []string {
	t.Helper()
	var out []string
	for i := range n {
		out = append(out, synthtest.LoRAFile(t, testmodels.Path(t, base), synth.LoRAOptions{Rank: 2 << i, Alpha: float32(k * (2 << i)), Seed: uint64(i + 1)}))
	}
	return out
}

// TestManagerLoRAModules: vLLM's --lora-modules over one model: each name
// answers as the base model with lora [{id, scale 1}] does (ids in name
// order), bit for bit, and the base model's own requests run without them;
// a module naming no served base, or a served model's name, is refused.
func TestManagerLoRAModules(t *testing.T) {
	paths := synthAdapters(t, "stories260K.gguf", 2)
	f := newManaged(t, func(c *server.ManagerConfig) {
		c.Dir = ""
		c.Models = []server.ModelSource{{Name: "small", Path: testmodels.Path(t, "stories260K.gguf")}}
		c.LoRAModules = []server.LoRAModule{{Name: "y", Path: paths[1]}, {Name: "x", Path: paths[0], Base: "small"}}
	})
	f.answers["x"], f.answers["y"] = "small", "small"
	_, base := f.complete(t, "small", "")
	_, x := f.complete(t, "x", "")
	_, y := f.complete(t, "y", "")
	_, x1 := f.complete(t, "small", `,"lora":[{"id":0,"scale":1}]`)
	_, y1 := f.complete(t, "small", `,"lora":[{"id":1,"scale":1}]`)
	if x != x1 || y != y1 {
		t.Errorf("x %q, small with lora id 0: %q; y %q, small with lora id 1: %q", x, x1, y, y1)
	}
	if x == base || y == base || x == y {
		t.Errorf("base %q, x %q, y %q: the adapters did not change the greedy text", base, x, y)
	}
	if _, again := f.complete(t, "small", ""); again != base {
		t.Errorf("small after the adapters %q, before %q", again, base)
	}
	if n := f.loadCount("small"); n != 1 {
		t.Errorf("small loaded %d times", n)
	}
	_, b := get(t, f.url+"/v1/models")
	if !strings.Contains(string(b), `"id":"x"`) || !strings.Contains(string(b), `"parent":"small"`) {
		t.Errorf("/v1/models: %s", b)
	}

	for _, c := range []struct {
		mod  server.LoRAModule
		want string
	}{
		{server.LoRAModule{Name: "z", Path: paths[0], Base: "nope"}, "not served"},
		{server.LoRAModule{Name: "small", Path: paths[0]}, "served already"},
		{server.LoRAModule{Name: "z", Path: "/nowhere.gguf"}, "nowhere"},
	} {
		_, err := server.NewManager(nil, server.ManagerConfig{Load: f.load, LoRAModules: []server.LoRAModule{c.mod},
			Models: []server.ModelSource{{Name: "small", Path: testmodels.Path(t, "stories260K.gguf")}}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c.mod, err, c.want)
		}
	}
}
