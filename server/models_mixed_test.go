package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/server"
)

// mixedNames are two models and three adapters (x and y over small, z over
// tiny), and the model each one's responses name.
var mixedNames = map[string]string{"small": "small", "tiny": "tiny", "x": "small", "y": "small", "z": "tiny"}

var mixedPrompts = []string{"Once upon a time", "The little dog"}

// newMixed is a manager of small and tiny with the adapters x, y (small's)
// and z (tiny's) as --lora-modules.
func newMixed(t *testing.T, adapters []string, tweak func(*server.ManagerConfig)) *managed {
	t.Helper()
	return newManaged(t, func(c *server.ManagerConfig) {
		c.LoRAModules = []server.LoRAModule{{Name: "x", Path: adapters[0], Base: "small"}, {Name: "y", Path: adapters[1], Base: "small"},
			{Name: "z", Path: adapters[2], Base: "tiny"}}
		if tweak != nil {
			tweak(c)
		}
	})
}

// ask sends one greedy completion: its status and text (or body).
func (f *managed) ask(t *testing.T, name, prompt string) (int, string, string) {
	resp, err := http.Post(f.url+"/v1/completions", "application/json", strings.NewReader(
		fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":12,"temperature":0}`, name, prompt)))
	if err != nil {
		t.Error(err)
		return 0, "", ""
	}
	defer resp.Body.Close()
	var out struct {
		Model   string
		Choices []struct{ Text string }
	}
	if resp.StatusCode != 200 {
		return resp.StatusCode, "", ""
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
		t.Errorf("%s: %v %+v", name, err, out)
		return 0, "", ""
	}
	return 200, out.Model, out.Choices[0].Text
}

// TestManagerMixedLoad: two models and three adapters served at once under
// mixed load, every request answered by the right model and adapter: each
// greedy text equals the one that name gives asked alone, bit for bit.
// Then at --max-loaded-models 1, where each model's load evicts the other
// while requests for it wait in the queue (--models-queue), every request
// is answered, none turned away; and with no queue, where they are turned
// away (503, Retry-After), a client that retries on 503 gets every answer.
// Either way the same answers: nothing lost, nothing answered by the wrong
// model.
func TestManagerMixedLoad(t *testing.T) {
	adapters := synthAdapters(t, "stories260K.gguf", 2)
	adapters = append(adapters, synthAdaptersAlpha(t, "TinyStories-656K-Q8_0.gguf", 1, 32)...)

	// Alone: one request at a time.
	ref := newMixed(t, adapters, nil)
	alone := map[[2]string]string{}
	for name := range mixedNames {
		for _, p := range mixedPrompts {
			code, _, text := ref.ask(t, name, p)
			if code != 200 {
				t.Fatalf("%s alone: %d", name, code)
			}
			alone[[2]string{name, p}] = text
		}
	}
	for _, p := range mixedPrompts {
		if alone[[2]string{"x", p}] == alone[[2]string{"small", p}] || alone[[2]string{"y", p}] == alone[[2]string{"small", p}] ||
			alone[[2]string{"x", p}] == alone[[2]string{"y", p}] || alone[[2]string{"z", p}] == alone[[2]string{"tiny", p}] {
			t.Fatalf("an adapter changed nothing on %q: %v", p, alone)
		}
	}

	for _, c := range []struct {
		name       string
		max, queue int
		retry      bool
	}{{"all loaded", 4, 0, false}, {"evicting, queued", 1, 512, false}, {"evicting, no queue", 1, 0, true}} {
		t.Run(c.name, func(t *testing.T) {
			f := newMixed(t, adapters, func(cfg *server.ManagerConfig) { cfg.MaxLoaded, cfg.MaxQueue = c.max, c.queue })
			const repeats = 3
			var wg sync.WaitGroup
			var mu sync.Mutex
			turnedAway := 0
			for name, model := range mixedNames {
				for _, p := range mixedPrompts {
					for range repeats {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for try := 0; ; try++ {
								code, answeredBy, text := f.ask(t, name, p)
								if code == 503 && c.retry && try < 10000 {
									mu.Lock()
									turnedAway++
									mu.Unlock()
									time.Sleep(time.Millisecond) // a client's pacing between retries, not synchronization
									continue
								}
								if code != 200 || answeredBy != model || text != alone[[2]string{name, p}] {
									t.Errorf("%s %q: %d by %q: %q, alone %q", name, p, code, answeredBy, text, alone[[2]string{name, p}])
								}
								return
							}
						}()
					}
				}
			}
			wg.Wait()
			loads := f.loadCount("small") + f.loadCount("tiny")
			if c.max == 1 && loads < 2 || c.max > 1 && loads != 2 {
				t.Errorf("%d loads at --max-loaded-models %d", loads, c.max)
			}
			t.Logf("%d loads, %d requests turned away and retried", loads, turnedAway)
		})
	}
}
