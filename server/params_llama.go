package server

import (
	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// llamaFields are the generation fields llama-server and vLLM take beyond
// OpenAI's (pipeline.LlamaSampling).
type llamaFields = pipeline.LlamaSampling

// llama.cpp's defaults for the DRY and XTC parameters a request leaves out.
const (
	dryBaseDefault       = 1.75
	dryAllowedLenDefault = 2
	dryLastNDefault      = 64
	xtcThresholdDefault  = 0.1
	mirostatTauDefault   = 5.0 // llama.cpp's and Ollama's
	mirostatEtaDefault   = 0.1
)

// dryBreakersDefault are llama.cpp's default DRY sequence breakers.
var dryBreakersDefault = []string{"\n", ":", "\"", "*"}

// defaultMax is the default max_tokens of a request: def, or 0 (until the
// context is full) when n_predict is -1.
func (f *samplingFields) defaultMax(def int) int {
	if f.unlimited {
		return 0
	}
	return def
}

// llamaParams are the params table's entries for llamaFields.
var llamaParams = []param{
	{"best_of", func(f *samplingFields, _ *messages.GenerateRequest) *apiError {
		if f.BestOf != nil && *f.BestOf != 1 {
			return badRequest("best_of", "best_of %d is not supported: troupe does not rank candidate completions; use n", *f.BestOf)
		}
		return nil
	}},
	{"use_beam_search", func(f *samplingFields, _ *messages.GenerateRequest) *apiError {
		if f.UseBeamSearch {
			return badRequest("use_beam_search", "use_beam_search is not supported: troupe has no beam search")
		}
		return nil
	}},
	{"mirostat", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.Mirostat == nil || *f.Mirostat == 0 {
			return nil
		}
		if *f.Mirostat < 0 || *f.Mirostat > 2 {
			return badRequest("mirostat", "mirostat %d: want 0 (off), 1 or 2", *f.Mirostat)
		}
		req.Sampling.Mirostat = *f.Mirostat
		req.Sampling.MirostatTau, req.Sampling.MirostatEta = mirostatTauDefault, mirostatEtaDefault
		return nil
	}},
	// Inert while mirostat is 0, as in llama.cpp (clients send them with it).
	floatIn("mirostat_tau", func(f *samplingFields) *float64 { return f.MirostatTau }, span{0, 100, false},
		func(s *messages.SamplingParams, v float32) {
			if s.Mirostat != 0 {
				s.MirostatTau = v
			}
		}),
	floatIn("mirostat_eta", func(f *samplingFields) *float64 { return f.MirostatEta }, span{0, 1, false},
		func(s *messages.SamplingParams, v float32) {
			if s.Mirostat != 0 {
				s.MirostatEta = v
			}
		}),
	{"n_predict", func(f *samplingFields, _ *messages.GenerateRequest) *apiError {
		switch n := f.NPredict; {
		case n == nil:
		case *n == -1:
			f.MaxTokens, f.unlimited = nil, true
		case *n < 1:
			return badRequest("n_predict", "n_predict %d: want -1 (until the context is full) or at least 1", *n)
		default:
			f.MaxTokens = n
		}
		return nil
	}},
	{"t_max_predict_ms", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.TMaxPredictMS != nil {
			if *f.TMaxPredictMS < 0 {
				return badRequest("t_max_predict_ms", "t_max_predict_ms %d is negative", *f.TMaxPredictMS)
			}
			req.MaxPredictNanos = int64(*f.TMaxPredictMS) * 1e6
		}
		return nil
	}},
	{"min_tokens", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.MinTokens != nil {
			if *f.MinTokens < 0 {
				return badRequest("min_tokens", "min_tokens %d is negative", *f.MinTokens)
			}
			req.MinTokens = *f.MinTokens
		}
		return nil
	}},
	{"include_stop_str_in_output", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		req.IncludeStopStr = f.IncludeStopStr
		return nil
	}},
	floatIn("typical_p", func(f *samplingFields) *float64 { return f.TypicalP }, span{0, 1, true},
		func(s *messages.SamplingParams, v float32) { s.TypicalP = v }),
	{"min_keep", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.MinKeep != nil {
			if *f.MinKeep < 0 || *f.MinKeep > maxMinKeep {
				return badRequest("min_keep", "min_keep %d is outside [0, %d]", *f.MinKeep, maxMinKeep)
			}
			req.Sampling.MinKeep = *f.MinKeep
		}
		return nil
	}},
	floatIn("xtc_probability", func(f *samplingFields) *float64 { return f.XTCProbability }, span{0, 1, false},
		func(s *messages.SamplingParams, v float32) { s.XTCProbability = v }),
	floatIn("xtc_threshold", func(f *samplingFields) *float64 { return f.XTCThreshold }, span{0, 1, false},
		func(s *messages.SamplingParams, v float32) { s.XTCThreshold = v }),
	floatIn("dry_multiplier", func(f *samplingFields) *float64 { return f.DryMultiplier }, span{0, 100, false},
		func(s *messages.SamplingParams, v float32) { s.DryMultiplier = v }),
	floatIn("dry_base", func(f *samplingFields) *float64 { return f.DryBase }, span{0, 100, false},
		func(s *messages.SamplingParams, v float32) { s.DryBase = v }),
	{"dry_allowed_length", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.DryAllowedLen != nil {
			if *f.DryAllowedLen < 0 {
				return badRequest("dry_allowed_length", "dry_allowed_length %d is negative", *f.DryAllowedLen)
			}
			req.Sampling.DryAllowedLength = *f.DryAllowedLen
		}
		return nil
	}},
	{"dry_penalty_last_n", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.DryLastN != nil {
			if *f.DryLastN < -1 {
				return badRequest("dry_penalty_last_n", "dry_penalty_last_n %d: want -1 (the context), 0 (off) or a window", *f.DryLastN)
			}
			req.Sampling.DryPenaltyLastN = *f.DryLastN
		}
		return nil
	}},
	{"dry_sequence_breakers", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.DryBreakers == nil {
			return nil // llamaDefaults' when DRY is on
		}
		if len(f.DryBreakers) == 0 || len(f.DryBreakers) > actors.MaxDryBreakers {
			return badRequest("dry_sequence_breakers", "dry_sequence_breakers must hold 1 to %d strings, got %d", actors.MaxDryBreakers, len(f.DryBreakers))
		}
		req.Sampling.DryBreakers = f.DryBreakers
		return nil
	}},
}

// maxMinKeep bounds min_keep: more would only make the general chain keep
// more of a vocabulary it already sorts.
const maxMinKeep = 1 << 20

// llamaDefaults sets llama.cpp's defaults for the DRY and XTC parameters
// the request left out, when it turned those samplers on.
func llamaDefaults(f *samplingFields, s *messages.SamplingParams) {
	if s.DryMultiplier > 0 {
		if f.DryBase == nil {
			s.DryBase = dryBaseDefault
		}
		if f.DryAllowedLen == nil {
			s.DryAllowedLength = dryAllowedLenDefault
		}
		if f.DryLastN == nil {
			s.DryPenaltyLastN = dryLastNDefault
		}
		if f.DryBreakers == nil {
			s.DryBreakers = dryBreakersDefault
		}
	}
	if s.XTCProbability > 0 && f.XTCThreshold == nil {
		s.XTCThreshold = xtcThresholdDefault
	}
}
