package server_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/server"
	"github.com/troupe-llm/troupe/server/servetest"
)

// fakeSizes is a Size function that gives each model the bytes of sizes
// (its KV pool 1 byte of them, so that the parts show).
func fakeSizes(sizes map[string]int64) func(server.LoadSpec) (server.ModelSize, error) {
	return func(spec server.LoadSpec) (server.ModelSize, error) {
		n, ok := sizes[spec.Name]
		if !ok {
			return server.ModelSize{}, errors.New("no size for " + spec.Name)
		}
		return server.ModelSize{Weights: n - 1, KV: 1}, nil
	}
}

// psSizes maps each model /api/ps lists to its size.
func (f *managed) psSizes(t *testing.T) map[string]int64 {
	t.Helper()
	var ps struct {
		Models []struct {
			Name string
			Size int64
		}
	}
	resp, b := get(t, f.url+"/api/ps")
	if resp.StatusCode != 200 || json.Unmarshal(b, &ps) != nil {
		t.Fatalf("/api/ps: %d %s", resp.StatusCode, b)
	}
	out := map[string]int64{}
	for _, m := range ps.Models {
		out[m.Name] = m.Size
	}
	return out
}

// TestManagerMemoryBudget: under --models-memory, loading a model evicts
// the least recently used idle ones until it fits; a model that alone is
// over the budget is a 400 naming it and both sizes (and nothing loads); a
// busy model is never evicted (with no queue, --models-queue 0: 503 with
// Retry-After); /api/ps reports each model's measured size.
func TestManagerMemoryBudget(t *testing.T) {
	sizes := map[string]int64{"small": 60, "tiny": 50, "huge": 200, "mid": 40}
	f := newManaged(t, func(c *server.ManagerConfig) {
		c.MaxBytes, c.Size = 100, fakeSizes(sizes)
		linkStories(t, filepath.Join(c.Dir, "huge.gguf"), filepath.Join(c.Dir, "mid.gguf"))
	})
	f.complete(t, "mid", "")
	f.advance(1)
	f.complete(t, "small", "") // 40 + 60: full
	if got := f.psSizes(t); got["mid:latest"] != 40 || got["small:latest"] != 60 || len(got) != 2 {
		t.Fatalf("/api/ps after mid and small at 100 bytes: %v", got)
	}
	f.advance(1)
	f.complete(t, "tiny", "") // 50 more: mid (least recent) goes, 110 > 100: small goes too
	if got := f.psNames(t); !slices.Equal(got, []string{"tiny:latest"}) {
		t.Fatalf("after tiny at 100 bytes: %v loaded", got)
	}
	f.advance(1)
	f.complete(t, "mid", "") // 50 + 40 fit: nothing evicted
	if got := f.psNames(t); !slices.Equal(got, []string{"mid:latest", "tiny:latest"}) {
		t.Fatalf("after mid: %v loaded", got)
	}

	for _, c := range []struct{ path, body, shape string }{
		{"/v1/completions", `{"model":"huge","prompt":"x"}`, `"code":"model_too_large"`},
		{"/api/generate", `{"model":"huge","prompt":"x"}`, `{"error":`},
		{"/v1/messages", `{"model":"huge","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`, `"invalid_request_error"`},
	} {
		resp, b := post(t, f.url+c.path, c.body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.shape) || !strings.Contains(string(b), `huge`) ||
			!strings.Contains(string(b), "200 B") || !strings.Contains(string(b), "100 B") {
			t.Errorf("%s huge (200 bytes of 100): %d %s", c.path, resp.StatusCode, b)
		}
	}
	if n := f.loadCount("huge"); n != 0 {
		t.Errorf("huge was loaded %d times", n)
	}
	if got := f.psNames(t); !slices.Equal(got, []string{"mid:latest", "tiny:latest"}) {
		t.Errorf("after the refused huge: %v loaded", got)
	}

	// small (60) must evict both; tiny is busy (held while a request
	// loads it again after an unload), so it cannot: 503.
	post(t, f.url+"/models/unload", `{"model":"tiny"}`)
	gate, tiny := f.busyLoading("tiny")
	resp, b := post(t, f.url+"/v1/completions", `{"model":"small","prompt":"x","max_tokens":1}`)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "busy") {
		t.Errorf("small while tiny is busy: %d %s", resp.StatusCode, b)
	}
	if got := f.psNames(t); !slices.Contains(got, "mid:latest") {
		t.Errorf("the refused load of small evicted mid: %v", got)
	}
	f.advance(1) // tiny's request ends after mid's: mid is the least recently used
	f.releaseThenLoad(t, gate, tiny, "tiny", "small")
}

// TestManagerBudgetAtStart: a model given by name that needs more than the
// budget, or a budget no model fits, is ErrOverBudget naming the model and
// both sizes; a directory's model over the budget alone is not.
func TestManagerBudgetAtStart(t *testing.T) {
	dir := t.TempDir()
	linkStories(t, filepath.Join(dir, "small.gguf"), filepath.Join(dir, "tiny.gguf"))
	sys := servetest.QuietSystem(t)
	sizes := map[string]int64{"small": 3 << 20, "tiny": 2 << 20, "big": 5 << 20}
	for _, c := range []struct {
		budget int64
		flag   bool
		want   string // "" no error
	}{
		{budget: 4 << 20},
		{budget: 4 << 20, flag: true, want: `"big" needs 5.00 MiB`},
		{budget: 1 << 20, want: `"tiny", needs 2.00 MiB`},
	} {
		cfg := server.ManagerConfig{Dir: dir, MaxBytes: c.budget, Size: fakeSizes(sizes), Load: (&managed{}).load}
		if c.flag {
			cfg.Models = []server.ModelSource{{Name: "big", Path: testmodels.Path(t, "stories260K.gguf")}}
		}
		m, err := server.NewManager(sys, cfg)
		if c.want == "" {
			if err != nil {
				t.Errorf("budget %d: %v", c.budget, err)
			} else {
				m.Close()
			}
			continue
		}
		if !errors.Is(err, server.ErrOverBudget) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), server.HumanBytes(c.budget)) {
			t.Errorf("budget %d, -m big %v: %v, want ErrOverBudget with %s", c.budget, c.flag, err, c.want)
		}
	}
	if _, err := server.NewManager(sys, server.ManagerConfig{Dir: dir, MaxBytes: 1, Load: (&managed{}).load}); err == nil {
		t.Error("MaxBytes without Size: no error")
	}
}

// TestManagerOllamaUnload: Ollama's unload request (keep_alive 0 with no
// prompt or messages, as `ollama stop` sends) unloads an idle model at once
// with done_reason "unload", and loads nothing when the model is not
// loaded.
func TestManagerOllamaUnload(t *testing.T) {
	f := newManaged(t, nil)
	f.complete(t, "small", "")
	f.complete(t, "tiny", "")
	resp, b := post(t, f.url+"/api/generate", `{"model":"small","keep_alive":0}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"done_reason":"unload"`) {
		t.Fatalf("/api/generate unload: %d %s", resp.StatusCode, b)
	}
	if got := f.psNames(t); !slices.Equal(got, []string{"tiny:latest"}) {
		t.Errorf("after unloading small: %v", got)
	}
	resp, b = post(t, f.url+"/api/chat", `{"model":"tiny","messages":[],"keep_alive":0}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"done_reason":"unload"`) || !strings.Contains(string(b), `"role":"assistant"`) {
		t.Fatalf("/api/chat unload: %d %s", resp.StatusCode, b)
	}
	if got := f.psNames(t); len(got) != 0 {
		t.Errorf("after unloading tiny: %v", got)
	}
	if resp, b = post(t, f.url+"/api/generate", `{"model":"small","keep_alive":0}`); resp.StatusCode != 200 || f.loadCount("small") != 1 {
		t.Errorf("unloading a model not loaded: %d %s, %d loads", resp.StatusCode, b, f.loadCount("small"))
	}
	if resp, _ = post(t, f.url+"/api/generate", `{"model":"nope","keep_alive":0}`); resp.StatusCode != 404 {
		t.Errorf("unloading an unknown model: %d", resp.StatusCode)
	}
}
