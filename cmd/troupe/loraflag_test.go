package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/lora"
)

// TestLoRAFlag: --lora takes FILE[:SCALE], repeated or comma-separated
// (llama-server's --lora-scaled too); a scale out of range or --device
// cuda is a one-line exit 2.
func TestLoRAFlag(t *testing.T) {
	c, err := parsePeer(t, "--lora", "a.gguf", "--lora", "b.gguf:0.5,c:d.gguf:-2", "--lora-scaled", "e.gguf:10")
	if err != nil {
		t.Fatal(err)
	}
	want := []loraSpec{{"a.gguf", 1}, {"b.gguf", 0.5}, {"c:d.gguf", -2}, {"e.gguf", 10}}
	if !reflect.DeepEqual(c.LoRA, want) {
		t.Errorf("parsed %v, want %v", c.LoRA, want)
	}
	c, err = parsePeer(t, "--lora", "a.gguf:0.5,b.gguf", "--lora-init-without-apply")
	if err != nil || !c.LoRAUnapplied {
		t.Fatalf("--lora-init-without-apply: %v %+v", err, c)
	}
	if got := unapplied(c.LoRA, c.LoRAUnapplied); !reflect.DeepEqual(got, []loraSpec{{"a.gguf", 0}, {"b.gguf", 0}}) || c.LoRA[0].Scale != 0.5 {
		t.Errorf("unapplied: %v (from %v), want every scale 0", got, c.LoRA)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lora", "a.gguf:11"}, "--lora: a.gguf:11: scale 11: want a number in [-10, 10]"},
		{[]string{"--lora", "a.gguf:NaN"}, "scale NaN"},
		{[]string{"--lora", ","}, "--lora: want FILE[:SCALE]"},
		{[]string{"--lora", "a.gguf", "--device", "cuda"}, "--lora runs on the CPU device only"},
	} {
		wantUsage(t, tc.want, append([]string{"serve"}, tc.args...)...)
	}
}

// TestRunLoRA: troupe run --lora applies the adapter at its scale to the
// request (the first greedy token is the argmax of the model's own forward
// pass with the adapter, and the output differs from the model's alone); an
// adapter for another model is an error naming it.
func TestRunLoRA(t *testing.T) {
	path := testmodels.Path(t, "stories260K.gguf")
	adapter := synthtest.LoRAFile(t, path, synth.LoRAOptions{Rank: 8, Alpha: 16, Seed: 1})
	args := []string{"-m", path, "-p", "Once upon a time", "-n", "8"}
	base, _ := greedyRun(t, args...)
	with, _ := greedyRun(t, append(args, "--lora", adapter+":0.75")...)
	if slices.Equal(base.IDs, with.IDs) {
		t.Errorf("--lora changed nothing: %v", with.IDs)
	}
	if first := firstGreedy(t, path, adapter, 0.75, base.PromptIDs); with.IDs[0] != first {
		t.Errorf("first token with --lora %d, the model's forward pass with the adapter %d", with.IDs[0], first)
	}

	other := synthtest.LoRAFile(t, testmodels.Path(t, "synthetic/synth-llama-tiny256-Q8_0.gguf"), synth.LoRAOptions{Rank: 4, Seed: 1})
	_, errOut, code := troupe(t, "run", "-m", path, "-p", "Once", "--lora", other)
	if code != 1 || !strings.Contains(errOut, "bad adapter") || !strings.Contains(errOut, other) {
		t.Errorf("an adapter for another model: exit %d, %q", code, errOut)
	}
}

// firstGreedy is the argmax of the last prompt row's logits with the
// adapter at scale, by model.Forward.
func firstGreedy(t *testing.T, path, adapter string, scale float32, prompt []int32) int32 {
	t.Helper()
	m, _, err := model.LoadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a, err := lora.Open(adapter)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c := &m.Config
	b, cache, err := oneSequence(c, prompt, false)
	if err != nil {
		t.Fatal(err)
	}
	b.LoRA = [][]lora.Scaled{{{Adapter: a, Scale: scale}}}
	logits := make([]float32, c.VocabSize)
	if err := m.Forward(model.NewState(c, 2), b, cache, logits); err != nil {
		t.Fatal(err)
	}
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return int32(best)
}
