package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// fieldRoutes are the generation routes, each with a body that sets the
// fields in extra (OpenAI routes: top-level; Ollama routes: in options).
var fieldRoutes = []struct {
	path string
	body func(extra string) string
}{
	{"/v1/completions", func(x string) string {
		return `{"model": "stories", "prompt": "Once upon a time", "max_tokens": 4` + x + `}`
	}},
	{"/v1/chat/completions", func(x string) string {
		return `{"model": "stories", "messages": [{"role": "user", "content": "Once"}], "max_tokens": 4` + x + `}`
	}},
	{"/api/generate", func(x string) string {
		return `{"model": "stories", "prompt": "Once", "stream": false, "options": {"num_predict": 4` + x + `}}`
	}},
	{"/api/chat", func(x string) string {
		return `{"model": "stories", "messages": [{"role": "user", "content": "Once"}], "stream": false, "options": {"num_predict": 4` + x + `}}`
	}},
}

// TestFieldsAcceptedOrRefused: every sampling field a peer implements is
// accepted on every generation route, and every one troupe does not
// implement is a 400 naming it, the same on OpenAI and Ollama routes.
func TestFieldsAcceptedOrRefused(t *testing.T) {
	f := newFixture(t, options{})
	openaiOnly := []string{`"n_predict": 3`, `"n_predict": -1`, `"min_tokens": 2`, `"include_stop_str_in_output": true`,
		`"min_keep": 2`, `"xtc_probability": 0.5, "xtc_threshold": 0.1`,
		`"dry_multiplier": 0.8, "dry_base": 1.75, "dry_allowed_length": 2, "dry_penalty_last_n": -1, "dry_sequence_breakers": ["\n", "."]`,
		`"stop": [` + strings.Repeat(`"zzz", `, 63) + `"zzz"]`, `"best_of": 1`, `"use_beam_search": false`}
	both := []string{`"typical_p": 0.5`, `"mirostat": 0, "mirostat_tau": 5, "mirostat_eta": 0.1`, `"mirostat": 2, "mirostat_tau": 4`}
	refused := []struct{ extra, field string }{
		{`"best_of": 2`, "best_of"}, {`"use_beam_search": true`, "use_beam_search"}, {`"mirostat": 3`, "mirostat"},
		{`"typical_p": 1.5`, "typical_p"},
	}
	for _, r := range fieldRoutes {
		ollama := strings.HasPrefix(r.path, "/api/")
		accepted := both
		if !ollama {
			accepted = append(accepted, openaiOnly...)
		}
		for _, x := range accepted {
			resp, b := post(t, f.url+r.path, r.body(", "+x))
			if resp.StatusCode != 200 {
				t.Errorf("%s with %s: status %d: %s", r.path, x, resp.StatusCode, b)
			}
		}
		for _, tc := range refused {
			resp, b := post(t, f.url+r.path, r.body(", "+tc.extra))
			var e struct {
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != 400 || !strings.Contains(string(e.Error), tc.field) {
				t.Errorf("%s with %s: status %d body %s, want a 400 naming %s", r.path, tc.extra, resp.StatusCode, b, tc.field)
			}
		}
	}
}

// completionText posts a greedy completion of the first reference case's
// prompt with the fields in extra and returns its text, finish reason and
// completion tokens.
func completionText(t *testing.T, f *fixture, extra string) (text, finish string, tokens int) {
	t.Helper()
	rc := loadCases(t)[0]
	p, _ := json.Marshal(rc.Prompt)
	resp, b := post(t, f.url+"/v1/completions", `{"model": "stories", "temperature": 0, "prompt": `+string(p)+extra+`}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: status %d: %s", extra, resp.StatusCode, b)
	}
	var r struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Choices[0].Text, r.Choices[0].FinishReason, r.Usage.CompletionTokens
}

// TestStopFields: n_predict limits the tokens as max_tokens does; a stop
// string ends the text before it, or after it with
// include_stop_str_in_output; min_tokens looks for no stop string and
// samples no stop token until that many tokens are out.
func TestStopFields(t *testing.T) {
	f := newFixture(t, options{})
	rc := loadCases(t)[0]
	full := f.text(rc.GreedyIDs[:24])
	if text, finish, n := completionText(t, f, `, "n_predict": 24`); text != full || finish != "length" || n != 24 {
		t.Fatalf("n_predict 24: %q %s %d tokens, want %q", text, finish, n, full)
	}
	// A stop string made of the text of tokens 3 and 4.
	at := len(f.text(rc.GreedyIDs[:3]))
	stop := f.text(rc.GreedyIDs[:5])[at:]
	if strings.Index(full, stop) != at {
		t.Skipf("stop %q occurs before token 3 in %q", stop, full)
	}
	stopJSON, _ := json.Marshal(stop)
	if text, finish, _ := completionText(t, f, `, "n_predict": 24, "stop": [`+string(stopJSON)+`]`); text != full[:at] || finish != "stop" {
		t.Errorf("stop: %q %s, want %q", text, finish, full[:at])
	}
	if text, _, _ := completionText(t, f, `, "n_predict": 24, "include_stop_str_in_output": true, "stop": [`+string(stopJSON)+`]`); text != full[:at+len(stop)] {
		t.Errorf("include_stop_str_in_output: %q, want %q", text, full[:at+len(stop)])
	}
	// With min_tokens 8 the stop string (done by token 5) is not looked for.
	if text, _, n := completionText(t, f, `, "n_predict": 12, "min_tokens": 8, "stop": [`+string(stopJSON)+`]`); n < 8 || !strings.Contains(text, stop) {
		t.Errorf("min_tokens 8 with stop %q: %q after %d tokens", stop, text, n)
	}
	// The first greedy token as a stop token: at once without min_tokens;
	// banned for the first 3 tokens with min_tokens 3.
	first := rc.GreedyIDs[0]
	if _, finish, n := completionText(t, f, `, "n_predict": 8, "stop_token_ids": [`+itoa(first)+`]`); n != 0 || finish != "stop" {
		t.Errorf("stop token %d: %d tokens, finish %s; want 0, stop", first, n, finish)
	}
	if _, _, n := completionText(t, f, `, "n_predict": 8, "min_tokens": 3, "stop_token_ids": [`+itoa(first)+`]`); n < 3 {
		t.Errorf("min_tokens 3 with stop token %d: %d tokens", first, n)
	}
}

func itoa(id int32) string { b, _ := json.Marshal(id); return string(b) }

// TestSamplerFieldsReachTheSampler: DRY changes a greedy completion that
// repeats itself (stories260K's does within 64 tokens), and XTC with
// probability 1 and threshold 0 always takes the second most likely token, so the fields reach the sampler.
func TestSamplerFieldsReachTheSampler(t *testing.T) {
	f := newFixture(t, options{})
	plain, _, _ := completionText(t, f, `, "n_predict": 64`)
	dry, _, _ := completionText(t, f, `, "n_predict": 64, "dry_multiplier": 5, "dry_allowed_length": 1, "dry_sequence_breakers": ["\u0000"]`)
	if dry == plain {
		t.Errorf("DRY left the greedy text unchanged: %q", plain)
	}
	sampled := `, "n_predict": 16, "temperature": 1, "top_k": 1, "seed": 3`
	a, _, _ := completionText(t, f, sampled)
	// Top-k 2, then XTC at threshold 0 drops the first: the second always.
	b, _, _ := completionText(t, f, `, "n_predict": 16, "temperature": 1, "top_k": 2, "seed": 3, "xtc_probability": 1, "xtc_threshold": 0`)
	if a != plain[:len(a)] {
		t.Errorf("top_k 1 is not greedy: %q vs %q", a, plain)
	}
	if b == a {
		t.Errorf("XTC with probability 1 left the text unchanged: %q", a)
	}
}
