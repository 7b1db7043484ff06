package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth/synthtest"
)

// fimIDs are the stories260K tokens fimModel renames to Qwen's FIM texts.
var fimIDs = [3]int32{509, 510, 511} // prefix, suffix, middle

// fimModel writes stories260K with three tokens renamed <|fim_prefix|>,
// <|fim_suffix|> and <|fim_middle|>, which llama.cpp's vocabulary load (and
// troupe's) takes for the FIM tokens.
func fimModel(t *testing.T) string {
	t.Helper()
	return synthtest.Edit(t, "stories260K.gguf", "stories-fim.gguf", func(k string, v any) any {
		if k != "tokenizer.ggml.tokens" {
			return v
		}
		toks := slices.Clone(v.([]string))
		for i, text := range []string{"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"} {
			toks[fimIDs[i]] = text
		}
		return toks
	})
}

// TestInfill: /infill as llama.vim calls it, /v1/completions' suffix and
// /api/generate's suffix all build llama-server's FIM prompt: their greedy
// output is that of the token sequence built by hand, and the prompt has its
// length.
func TestInfill(t *testing.T) {
	f := newFixture(t, options{model: fimModel(t)})
	tok := f.m.Tokenizer
	enc := func(s string, special bool) []int32 {
		ids, err := tok.Encode(s, false, special)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	// [BOS][FIM_PRE]prefix prompt[FIM_SUF]suffix[FIM_MID], after the extra
	// context's last n_ctx - 2048 + 2 tokens (llama-server's room for it
	// with its 2048-token batch and n_predict -1).
	plain := slices.Concat([]int32{tok.BOS(), fimIDs[0]}, enc("Once upon", false), enc(" a", true),
		[]int32{fimIDs[1]}, enc(" time.", false), []int32{fimIDs[2]})
	extra := slices.Concat(enc("\n\n--- snippet ---\n\n", false), enc("Lily", false))
	nExtra := min(max(0, f.rt.MaxModelLen()-2048+2), len(extra))
	want := slices.Concat(extra[len(extra)-nExtra:], plain)
	ref, b := post(t, f.url+"/v1/completions", `{"model": "stories", "temperature": 0, "max_tokens": 6, "prompt": `+jsonOf(want)+`}`)
	if ref.StatusCode != 200 {
		t.Fatalf("reference: %d %s", ref.StatusCode, b)
	}
	var refResp struct {
		Choices []struct{ Text string } `json:"choices"`
	}
	json.Unmarshal(b, &refResp)
	wantText := refResp.Choices[0].Text

	// llama.vim's request (but for its samplers, below).
	resp, b := post(t, f.url+"/infill", `{"input_prefix": "Once upon", "input_suffix": " time.", "prompt": " a",
		"input_extra": [{"filename": "a.txt", "text": "Lily"}], "n_predict": 6, "top_k": 1, "top_p": 0.99, "stream": false,
		"samplers": ["top_k", "top_p"], "cache_prompt": true, "t_max_prompt_ms": 500, "t_max_predict_ms": 1000,
		"n_indent": 0, "response_fields": ["content", "timings/prompt_n", "tokens_cached", "truncated"]}`)
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/infill: %d %s", resp.StatusCode, b)
	}
	if got["content"] != wantText || got["timings/prompt_n"] != float64(len(want)) || len(got) != 4 {
		t.Errorf("/infill: %v, want content %q and prompt_n %d", got, wantText, len(want))
	}
	// Streamed, the pieces add up to the same text.
	resp, b = post(t, f.url+"/infill", `{"input_prefix": "Once upon", "input_suffix": " time.", "prompt": " a", "n_predict": 6,
		"temperature": 0, "stream": true}`)
	var streamed strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		var c struct {
			Content string `json:"content"`
			Stop    bool   `json:"stop"`
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(d), &c) == nil && !c.Stop {
			streamed.WriteString(c.Content)
		}
	}
	if resp.StatusCode != 200 || streamed.String() != wantText {
		t.Errorf("/infill streamed: %d %q, want %q", resp.StatusCode, streamed.String(), wantText)
	}
	// /v1/completions' suffix and /api/generate's.
	resp, b = post(t, f.url+"/v1/completions", `{"model": "stories", "temperature": 0, "max_tokens": 6, "prompt": "Once upon a", "suffix": " time."}`)
	_ = resp
	var cr struct {
		Choices []struct{ Text string } `json:"choices"`
		Usage   struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	wantN := 4 + len(enc("Once upon a", false)) + len(enc(" time.", false)) // BOS and the three FIM tokens
	if err := json.Unmarshal(b, &cr); err != nil || len(cr.Choices) != 1 || cr.Usage.PromptTokens != wantN {
		t.Errorf("suffix: %s, want a prompt of %d tokens", b, wantN)
	}
	status, _, objs := ollamaDo(t, "POST", f.url+"/api/generate", `{"model": "stories", "prompt": "Once upon a", "suffix": " time.",
		"stream": false, "options": {"temperature": 0, "num_predict": 6}}`)
	if status != 200 || objs[0]["response"] != cr.Choices[0].Text {
		t.Errorf("/api/generate suffix: %d %v, want %q", status, objs, cr.Choices[0].Text)
	}
	// llama.vim's sampler list, infill among them, as it sends it.
	resp, b = post(t, f.url+"/infill", `{"input_prefix": "a", "input_suffix": "b", "samplers": ["top_k", "top_p", "infill"], "top_k": 40, "top_p": 0.99, "n_predict": 4}`)
	if resp.StatusCode != 200 {
		t.Errorf("samplers with infill: %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, f.url+"/infill", `{"input_prefix": "a", "input_suffix": "b", "samplers": ["top_p", "top_k"]}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"param":"samplers"`) {
		t.Errorf("samplers out of order: %d %s", resp.StatusCode, b)
	}
}

// TestInfillRefused: a model without FIM tokens refuses every FIM request
// with a 400 that says why; /infill refuses requests missing its inputs.
func TestInfillRefused(t *testing.T) {
	f := newFixture(t, options{})
	for _, tc := range []struct{ path, body, want string }{
		{"/infill", `{"input_prefix": "a", "input_suffix": "b"}`, "prefix token is missing"},
		{"/v1/completions", `{"model": "stories", "prompt": "a", "suffix": "b"}`, "fill-in-the-middle"},
		{"/api/generate", `{"model": "stories", "prompt": "a", "suffix": "b", "stream": false}`, "fill-in-the-middle"},
		{"/infill", `{"input_suffix": "b"}`, "input_prefix"},
		{"/infill", `{"input_prefix": "b"}`, "input_suffix"},
	} {
		resp, b := post(t, f.url+tc.path, tc.body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s, want a 400 saying %q", tc.path, tc.body, resp.StatusCode, b, tc.want)
		}
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }
