package server

import (
	"slices"

	"github.com/troupe-llm/troupe/messages"
)

// indentStop is llama-server's n_indent: once the output has a newline,
// a line that starts with less indentation (spaces and tabs) than min ends
// the output, cut before that line's first other character. It holds back
// a line's leading whitespace until that character comes.
type indentStop struct {
	min       int
	lineStart bool   // after a newline, no other character yet
	held      string // the line's leading whitespace
}

// add passes a piece of output through; cut reports that the output ends
// here. final sends what is held.
func (s *indentStop) add(piece string, final bool) (out string, cut bool) {
	if s.min <= 0 {
		return piece, false
	}
	b := make([]byte, 0, len(piece))
	for i := 0; i < len(piece); i++ {
		ch := piece[i]
		switch {
		case !s.lineStart:
			b = append(b, ch)
			s.lineStart = ch == '\n'
		case ch == ' ' || ch == '\t':
			s.held += string(ch)
		case len(s.held) < s.min:
			return string(b) + s.held, true
		default:
			b = append(b, s.held...)
			b = append(b, ch)
			s.held, s.lineStart = "", ch == '\n'
		}
	}
	if final {
		b = append(b, s.held...)
		s.held = ""
	}
	return string(b), false
}

// samplerOrder is llama.cpp's default sampler chain, the order in which
// troupe runs its samplers; samplerNames maps llama-server's names for
// them (common_sampler_types_from_names) to it.
var (
	samplerOrder = []string{"penalties", "dry", "top_k", "typ_p", "top_p", "min_p", "xtc", "infill", "temperature"}
	samplerNames = map[string]string{
		"penalties": "penalties", "dry": "dry", "top_k": "top_k", "typ_p": "typ_p", "typical_p": "typ_p",
		"typ": "typ_p", "typical": "typ_p", "top_p": "top_p", "nucleus": "top_p", "min_p": "min_p",
		"xtc": "xtc", "infill": "infill", "temperature": "temperature", "temp": "temperature",
	}
)

// applySamplers is llama-server's samplers field: only the samplers named
// run, the others are turned off (without temperature, the logits are
// drawn from unscaled); infill, which is off by default, runs only when
// named. troupe runs them in llama.cpp's default order only, and has no
// top-n-sigma sampler: a list it cannot honour is a 400. nil leaves the
// chain as the other fields set it.
func applySamplers(names []string, s *messages.SamplingParams) *apiError {
	if names == nil {
		return nil
	}
	on := map[string]bool{}
	last := -1
	for _, n := range names {
		canon, ok := samplerNames[n]
		if !ok {
			return badRequest("samplers", "samplers: %q is not a sampler troupe runs (it has %v; no top_n_sigma sampler)", n, samplerOrder)
		}
		i := slices.Index(samplerOrder, canon)
		if i <= last {
			return badRequest("samplers", "samplers: troupe runs them in llama.cpp's default order %v; %q is out of place", samplerOrder, n)
		}
		last, on[canon] = i, true
	}
	for name, off := range map[string]func(){
		"penalties": func() { s.RepetitionPenalty, s.PresencePenalty, s.FrequencyPenalty = 0, 0, 0 },
		"dry":       func() { s.DryMultiplier = 0 },
		"top_k":     func() { s.TopK = 0 },
		"typ_p":     func() { s.TypicalP = 0 },
		"top_p":     func() { s.TopP = 0 },
		"min_p":     func() { s.MinP = 0 },
		"xtc":       func() { s.XTCProbability = 0 },
	} {
		if !on[name] {
			off()
		}
	}
	s.Infill = on["infill"]
	if !on["temperature"] && s.Temperature > 0 {
		s.Temperature = 1
	}
	return nil
}
