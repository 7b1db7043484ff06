package actors_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

// TestMirostatReachesTheSampler: mirostat v2 with a target surprise of 0
// keeps only the most likely token at every step (mu starts at 0 and only
// falls), so at temperature 1.5 it gives the greedy output, which the same
// request without mirostat does not.
func TestMirostatReachesTheSampler(t *testing.T) {
	rt, prompt := storiesOnce(t)
	want := run(t, rt, greedy(prompt, 24)).ids[0]
	hot := messages.SamplingParams{Temperature: 1.5, Seed: 7, HasSeed: true}
	if got := run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 24, Sampling: hot}).ids[0]; slices.Equal(got, want) {
		t.Fatalf("temperature 1.5 gave the greedy output %v: the test cannot tell mirostat from it", got)
	}
	miro := hot
	miro.Mirostat, miro.MirostatTau, miro.MirostatEta = 2, 0, 0.1
	if got := run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 24, Sampling: miro}).ids[0]; !slices.Equal(got, want) {
		t.Errorf("mirostat 2, tau 0: %v, want the greedy %v", got, want)
	}
	bad := miro
	bad.Mirostat = 3
	if _, err := rt.Stream(t.Context(), &messages.GenerateRequest{Prompt: prompt, Sampling: bad}); err == nil || !strings.Contains(err.Error(), "mirostat 3") {
		t.Errorf("mirostat 3: %v, want an error naming it", err)
	}
}

// TestReasoningBudgetForcesTheEnd: a prompt that ends inside a section
// (its last token is the start marker) gets budget tokens of its own, then
// the message and the end marker, forced; without a budget the greedy
// output goes on otherwise. Bad budgets are refused.
func TestReasoningBudgetForcesTheEnd(t *testing.T) {
	rt, prompt := storiesOnce(t)
	startText, err := rt.Detokenize(prompt[len(prompt)-1:])
	if err != nil {
		t.Fatal(err)
	}
	rb := &messages.ReasoningBudget{Tokens: 3, Start: strings.TrimSpace(startText), End: "</think>", Message: " Done"}
	msg, err := rt.TokenizeText(rb.Message, false, true)
	if err != nil {
		t.Fatal(err)
	}
	end, err := rt.TokenizeText(rb.End, false, true)
	if err != nil {
		t.Fatal(err)
	}
	forced := append(msg, end...) // tokenized apart, as llama-server does
	if s, _ := rt.TokenizeText(rb.Start, false, true); !slices.Equal(s, prompt[len(prompt)-1:]) {
		t.Fatalf("start marker %q tokenizes to %v, not the prompt's last token %d", rb.Start, s, prompt[len(prompt)-1])
	}
	free := run(t, rt, greedy(prompt, 16)).ids[0]
	req := greedy(prompt, 16)
	req.ReasoningBudget = rb
	got := run(t, rt, req).ids[0]
	if !slices.Equal(got[:3], free[:3]) {
		t.Errorf("the section's own tokens %v, want the greedy %v", got[:3], free[:3])
	}
	if end := 3 + len(forced); len(got) < end || !slices.Equal(got[3:end], forced) {
		t.Fatalf("after 3 tokens: %v, want the forced %v (message and end)", got, forced)
	}
	if slices.Equal(got, free) {
		t.Error("the budget changed nothing")
	}

	for _, bad := range []*messages.ReasoningBudget{{Tokens: -1, Start: "a", End: "b"}, {Tokens: 5, Start: "a"}} {
		req := greedy(prompt, 4)
		req.ReasoningBudget = bad
		var re *actors.RequestError
		if _, err := rt.Stream(t.Context(), req); !errors.As(err, &re) || re.Param != "reasoning_budget" {
			t.Errorf("budget %+v: %v, want a RequestError for reasoning_budget", bad, err)
		}
	}
}

// storiesOnce starts a runtime on stories260K and tokenizes "Once upon a
// time" for it.
func storiesOnce(t *testing.T) (*actors.Runtime, []int32) {
	noLeaks(t)
	rt := start(t, openModel(t, "stories260K.gguf"), actors.Config{})
	prompt, err := rt.Tokenize("Once upon a time")
	if err != nil {
		t.Fatal(err)
	}
	return rt, prompt
}
