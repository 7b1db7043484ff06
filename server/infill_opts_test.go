package server

import (
	"testing"

	"github.com/troupe-llm/troupe/messages"
)

// TestIndentStop checks n_indent as llama-server applies it: the first line
// is never cut; a later line starting with less indentation ends the output
// before its first other character (an empty line too).
func TestIndentStop(t *testing.T) {
	tests := []struct {
		min    int
		pieces []string
		want   string
		cut    bool
	}{
		{0, []string{"a\nb"}, "a\nb", false},
		{2, []string{"x = 1\n", "  y", " = 2\n", "z"}, "x = 1\n  y = 2\n", true},
		{2, []string{"x\n ", " y\n\t", "\tz"}, "x\n  y\n\t\tz", false},
		{4, []string{"x\n  \n"}, "x\n  ", true},
		{2, []string{"x\n "}, "x\n ", false}, // final: the held whitespace is sent
	}
	for _, tt := range tests {
		s := indentStop{min: tt.min}
		var got string
		cut := false
		for i, p := range tt.pieces {
			out, c := s.add(p, i == len(tt.pieces)-1)
			got += out
			if c {
				cut = true
				break
			}
		}
		if got != tt.want || cut != tt.cut {
			t.Errorf("n_indent %d %q: %q cut %v, want %q %v", tt.min, tt.pieces, got, cut, tt.want, tt.cut)
		}
	}
}

// TestApplySamplers: the samplers not named are off; unknown names, the
// infill sampler and another order are 400s naming samplers.
func TestApplySamplers(t *testing.T) {
	full := messages.SamplingParams{Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, TypicalP: 0.5,
		XTCProbability: 0.5, DryMultiplier: 1, RepetitionPenalty: 1.1}
	s := full
	if e := applySamplers([]string{"top_k", "nucleus"}, &s); e != nil {
		t.Fatal(e)
	}
	want := messages.SamplingParams{Temperature: 1, TopK: 40, TopP: 0.9}
	if s.Temperature != want.Temperature || s.TopK != 40 || s.TopP != 0.9 || s.MinP != 0 || s.TypicalP != 0 ||
		s.XTCProbability != 0 || s.DryMultiplier != 0 || s.RepetitionPenalty != 0 {
		t.Errorf("got %+v", s)
	}
	s = full
	if e := applySamplers(nil, &s); e != nil || s.MinP != full.MinP {
		t.Errorf("nil list changed the chain: %+v %v", s, e)
	}
	for _, bad := range [][]string{{"infill", "top_k"}, {"top_p", "top_k"}, {"mirostat"}, {"top_k", "top_k"}, {"top_n_sigma"}} {
		s = full
		if e := applySamplers(bad, &s); e == nil || *e.Param != "samplers" {
			t.Errorf("%v: %v, want a 400 naming samplers", bad, e)
		}
	}
}
