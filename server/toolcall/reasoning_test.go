package toolcall

import "testing"

// TestReasoningMarker: the formats with a reasoning block name the text a
// template that teaches it holds; the others have none.
func TestReasoningMarker(t *testing.T) {
	for _, tc := range []struct {
		f    Format
		want string
		ok   bool
	}{
		{Hermes, "<think>", true},
		{DeepSeekR1, "<think>", true},
		{OpenAI, "<|channel|>analysis", true},
		{Mistral, "[THINK]", true},
		{CommandR7B, "<|START_THINKING|>", true},
		{Gemma4, "<|channel>thought", true},
		{Llama3JSON, "", false},
		{FunctionaryV3, "", false},
		{None, "", false},
	} {
		if got, ok := tc.f.ReasoningMarker(); got != tc.want || ok != tc.ok {
			t.Errorf("%q: %q %v, want %q %v", tc.f, got, ok, tc.want, tc.ok)
		}
	}
	for _, f := range Names() { // a marker is one the parser reads: the output's reasoning splits at it
		m, ok := Format(f).ReasoningMarker()
		if !ok {
			continue
		}
		p := &Parser{Format: Format(f), NoCalls: true}
		out := m + "\nweighing it\n"
		if r := p.Parse(out); r.Reasoning == "" && f != string(OpenAI) {
			t.Errorf("%s: %q parses as %+v, without reasoning", f, out, r)
		}
	}
}
