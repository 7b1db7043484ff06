package server

import "testing"

// TestOllamaOptions: the server's sampling defaults under Ollama's option
// names, nothing when none is set.
func TestOllamaOptions(t *testing.T) {
	temp, topK, pen, seed := 0.0, 5, 1.1, int64(9)
	d := SamplingDefaults{Temperature: &temp, TopK: &topK, RepetitionPenalty: &pen, Seed: &seed}
	got := d.ollamaOptions()
	want := map[string]string{"temperature": "0", "top_k": "5", "repeat_penalty": "1.1", "seed": "9"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if (&SamplingDefaults{}).ollamaOptions() != nil {
		t.Error("no defaults gave options")
	}
}
