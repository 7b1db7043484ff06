package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model/lora"
)

// TestLoRAField: llama-server's per-request lora list and /lora-adapters
// routes, on stories260K with one random adapter loaded at scale 1.
func TestLoRAField(t *testing.T) {
	a := synthtest.LoRA(t, testmodels.Path(t, "stories260K.gguf"), synth.LoRAOptions{Rank: 4, Alpha: 8, Seed: 1})
	f := newFixture(t, options{rt: actors.Config{LoRA: []lora.Scaled{{Adapter: a, Scale: 1}}}})

	resp, b := get(t, f.url+"/lora-adapters")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":0`) || !strings.Contains(string(b), `"scale":1`) {
		t.Fatalf("GET /lora-adapters: %d %s", resp.StatusCode, b)
	}
	complete := func(extra string) (int, string) {
		resp, b := post(t, f.url+"/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0`+extra+`}`)
		var cr struct{ Choices []struct{ Text string } }
		if resp.StatusCode == 200 {
			if err := json.Unmarshal(b, &cr); err != nil || len(cr.Choices) != 1 {
				t.Fatalf("%s: %s", extra, b)
			}
			return 200, cr.Choices[0].Text
		}
		return resp.StatusCode, string(b)
	}
	_, def := complete(``)
	_, on := complete(`, "lora": [{"id": 0, "scale": 1}]`)
	_, base := complete(`, "lora": []`)
	_, zero := complete(`, "lora": [{"id": 0}]`)
	if def != on || base == on || zero != base {
		t.Errorf("default %q, adapter at 1 %q, base %q, adapter at 0 %q: want default = at 1 != base = at 0", def, on, base, zero)
	}
	for _, bad := range []struct{ extra, param string }{
		{`, "lora": [{"id": 5, "scale": 1}]`, "lora[0].id"},
		{`, "lora": [{"id": 0, "scale": 99}]`, "lora[0].scale"},
		{`, "lora": [{"id": "a"}]`, "lora[0].id"},
		{`, "lora": [{"scale": 1}]`, "lora[0].id"},
		{`, "lora": "x"`, "lora"},
	} {
		if st, b := complete(bad.extra); st != 400 || !strings.Contains(b, `"param":"`+bad.param+`"`) {
			t.Errorf("%s: %d %s, want a 400 naming %s", bad.extra, st, b, bad.param)
		}
	}
	resp, b = post(t, f.url+"/lora-adapters", `[{"id": 0, "scale": 0}]`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"success":true`) {
		t.Fatalf("POST /lora-adapters: %d %s", resp.StatusCode, b)
	}
	if _, now := complete(``); now != base {
		t.Errorf("after setting scale 0: %q, want the base model's %q", now, base)
	}
	if resp, b := post(t, f.url+"/lora-adapters", `[{"id": 3, "scale": 1}]`); resp.StatusCode != 400 {
		t.Errorf("POST an unknown id: %d %s", resp.StatusCode, b)
	}
}
