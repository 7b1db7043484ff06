package server_test

import (
	"math"
	"slices"
	"testing"
)

// TestNodeOpenAIClient drives the server with the official npm openai
// client: completions and chat, streaming and not, n > 1, include_usage,
// embeddings (base64, the client's default, and float), an error; greedy
// output equals llama.cpp's.
func TestNodeOpenAIClient(t *testing.T) {
	mods := nodeModules(t, "openai")
	f := newFixture(t, options{})
	rc := loadCases(t)[0]
	var got struct {
		Completion, Streamed, ChatStreamed, Role string
		CompletionUsage, StreamedUsage           struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
		Chat       []string
		Embeddings struct {
			Base64, Float [][]float64
			PromptTokens  int
		}
		Error *struct {
			Status      int
			Type, Param string
		}
	}
	runNode(t, mods, "testdata/openai-client.cjs", &got, f.url, rc.Prompt)
	want := f.text(rc.GreedyIDs)
	if got.Completion != want || got.Streamed != want {
		t.Errorf("completion %q, streamed %q; want %q", got.Completion, got.Streamed, want)
	}
	if got.CompletionUsage.CompletionTokens != len(rc.GreedyIDs) || got.StreamedUsage.CompletionTokens != len(rc.GreedyIDs) {
		t.Errorf("usage %+v / streamed %+v", got.CompletionUsage, got.StreamedUsage)
	}
	if len(got.Chat) != 2 || got.Chat[0] == "" || got.Chat[0] != got.Chat[1] || got.ChatStreamed != got.Chat[0] || got.Role != "assistant" {
		t.Errorf("chat %q, streamed %q (role %q)", got.Chat, got.ChatStreamed, got.Role)
	}
	e := got.Embeddings
	if len(e.Base64) != 2 || len(e.Float) != 2 || e.PromptTokens == 0 {
		t.Errorf("embeddings: %d (base64) and %d (float) vectors, %d prompt tokens; want 2, 2, some", len(e.Base64), len(e.Float), e.PromptTokens)
	}
	for i := range min(len(e.Base64), len(e.Float)) {
		var ss float64
		for _, x := range e.Float[i] {
			ss += x * x
		}
		// JSON carries each float32 in its shortest decimal form, base64 its
		// bits: the same float32 values.
		same := slices.EqualFunc(e.Base64[i], e.Float[i], func(a, b float64) bool { return float32(a) == float32(b) })
		if len(e.Float[i]) != f.m.Config.Dim || !same || math.Abs(ss-1) > 1e-4 {
			t.Errorf("embedding %d: %d values (want %d), base64 equal to float %v, squared norm %.6f (want 1)",
				i, len(e.Float[i]), f.m.Config.Dim, same, ss)
		}
	}
	if got.Error == nil || got.Error.Status != 400 || got.Error.Type != "invalid_request_error" || got.Error.Param != "temperature" {
		t.Errorf("error %+v", got.Error)
	}
	f.waitIdle(t)
}
