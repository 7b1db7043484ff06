package server_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server"
)

// TestReasoningBudgetFields: llama-server's reasoning_budget_tokens (and
// its alias) and Anthropic's thinking.budget_tokens reach the runtime with
// the template's markers; a template without a reasoning section, or a
// prompt route, refuses a budget naming the field.
func TestReasoningBudgetFields(t *testing.T) {
	s := newScripted(t, qwen3, server.Config{})
	s.say(messages.FinishStop, "ok")
	chat := func(extra string) (int, string) {
		resp, b := post(t, s.url+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8`+extra+`}`)
		return resp.StatusCode, string(b)
	}
	if st, b := chat(`, "reasoning_budget_tokens": 5, "reasoning_budget_message": "Enough."`); st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	want := messages.ReasoningBudget{Tokens: 5, Start: "<think>", End: "</think>", Message: "Enough."}
	if got := s.last(t).ReasoningBudget; got == nil || *got != want {
		t.Errorf("budget %+v, want %+v", got, want)
	}
	if st, b := chat(`, "thinking_budget_tokens": 0`); st != 200 || s.last(t).ReasoningBudget == nil || s.last(t).ReasoningBudget.Tokens != 0 {
		t.Errorf("thinking_budget_tokens 0: %d %s %+v", st, b, s.last(t).ReasoningBudget)
	}
	if st, b := chat(`, "reasoning_budget_tokens": -1`); st != 200 || s.last(t).ReasoningBudget != nil {
		t.Errorf("-1: %d %s %+v", st, b, s.last(t).ReasoningBudget)
	}
	for _, bad := range []struct{ extra, field string }{
		{`, "reasoning_budget_tokens": -2`, "reasoning_budget_tokens"},
		{`, "reasoning_budget_tokens": 3, "thinking_budget_tokens": 3`, "thinking_budget_tokens"},
	} {
		if st, b := chat(bad.extra); st != 400 || !strings.Contains(b, `"param":"`+bad.field+`"`) {
			t.Errorf("%s: %d %s", bad.extra, st, b)
		}
	}
	resp, b := post(t, s.url+"/v1/completions", `{"prompt": "hi", "max_tokens": 4, "reasoning_budget_tokens": 3}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "reasoning_budget_tokens") {
		t.Errorf("completions: %d %s", resp.StatusCode, b)
	}

	resp, b = post(t, s.url+"/v1/messages", `{"model": "stories", "max_tokens": 1500, "messages": [{"role": "user", "content": "hi"}],
		"thinking": {"type": "enabled", "budget_tokens": 1024}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("messages: %d %s", resp.StatusCode, b)
	}
	if got := s.last(t).ReasoningBudget; got == nil || got.Tokens != 1024 || got.End != "</think>" {
		t.Errorf("thinking.budget_tokens: %+v", got)
	}

	plain := newScripted(t, qwen25, server.Config{})
	plain.say(messages.FinishStop, "ok")
	resp, b = post(t, plain.url+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "reasoning_budget_tokens": 5}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"param":"reasoning_budget_tokens"`) {
		t.Errorf("no reasoning section: %d %s", resp.StatusCode, b)
	}
}

// TestSpeculativeFields: llama-server's speculative fields reach the
// runtime; its checks name them (bounds on a server that does not
// speculate are a 400: they could not be honoured).
func TestSpeculativeFields(t *testing.T) {
	s := newScripted(t, qwen25, server.Config{})
	s.say(messages.FinishStop, "ok")
	for _, tc := range []struct {
		extra string
		want  *messages.SpeculativeParams
	}{
		{``, nil},
		{`, "speculative": false`, &messages.SpeculativeParams{Off: true}},
	} {
		resp, b := post(t, s.url+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]`+tc.extra+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.extra, resp.StatusCode, b)
		}
		got := s.last(t).Speculative
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: %+v, want %+v", tc.extra, got, tc.want)
		}
	}
	resp, b := post(t, s.url+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "speculative.n_max": 6}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"param":"speculative`) {
		t.Errorf("n_max on a server without speculation: %d %s", resp.StatusCode, b)
	}
}

// TestSpeculativeMetrics: a server that speculates reports vLLM's
// spec_decode counters, and the response's usage does not change.
func TestSpeculativeMetrics(t *testing.T) {
	f := newFixture(t, options{rt: actors.Config{Speculative: actors.SpecConfig{Type: actors.SpecNGram}}})
	text := strings.Repeat("Once upon a time there was a cat. ", 6)
	resp, b := post(t, f.url+"/v1/completions", `{"prompt": "`+text+`", "max_tokens": 120, "temperature": 0, "ignore_eos": true}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if !regexp.MustCompile(`"completion_tokens_details":\{"accepted_prediction_tokens":[1-9]`).Match(b) {
		t.Errorf("usage without the accepted draft tokens: %s", b)
	}
	mresp, err := http.Get(f.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	m, _ := io.ReadAll(mresp.Body)
	for _, name := range []string{"troupe:spec_decode_num_drafts_total", "troupe:spec_decode_num_draft_tokens_total", "troupe:spec_decode_num_accepted_tokens_total"} {
		re := regexp.MustCompile(regexp.QuoteMeta(name) + `\{[^}]*\} ([0-9.e+]+)`)
		g := re.FindSubmatch(m)
		if g == nil || string(g[1]) == "0" {
			t.Errorf("%s: %v, want a count above 0 (a text quoted back is drafted)", name, g)
		}
	}
}
