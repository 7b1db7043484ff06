package ollama

import (
	"encoding/json"
	"maps"
	"math"
	"slices"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// Bounds on the stop strings of a request: Ollama has no limit of 4, as
// OpenAI's; these bound the work of matching them.
const (
	maxStopBytes = 1024
	maxStops     = 1024
)

// Ollama's defaults for the sampling options a request leaves out
// (api.DefaultOptions): an Ollama client expects them, not OpenAI's.
const (
	ollamaTemperature = 0.8
	ollamaTopK        = 40
	ollamaTopP        = 0.9
	ollamaRepeatLastN = 64
	ollamaMirostatTau = 5.0 // inert while mirostat is 0
	ollamaMirostatEta = 0.1
)

// ollamaLimits are what an Ollama request's options set beyond the
// sampling parameters: the most tokens to generate (num_predict; 0: until
// the context is full) and the context the request may use (num_ctx; 0:
// the served context).
type ollamaLimits struct {
	numPredict int
	numCtx     int
}

// An ollamaOption is one key of Ollama's "options" object: set decodes its
// JSON value, checks it and applies it.
type ollamaOption struct {
	name string
	set  func(v json.RawMessage, g *messages.GenerateRequest, l *ollamaLimits) *pipeline.Error
}

// ollamaOptions are the options troupe applies, in the order they are
// applied (repeat_last_n after the penalties, which it may turn off).
var ollamaOptions = []ollamaOption{
	{"num_predict", ollamaInt("num_predict", func(n int, _ *messages.GenerateRequest, l *ollamaLimits) *pipeline.Error {
		l.numPredict = max(n, 0) // -1 (infinite) and -2 (fill the context): until the context is full
		return nil
	})},
	{"num_ctx", ollamaInt("num_ctx", func(n int, _ *messages.GenerateRequest, l *ollamaLimits) *pipeline.Error {
		if n < 0 {
			return pipeline.Errorf("num_ctx", "option \"num_ctx\" %d must not be negative", n)
		}
		l.numCtx = n
		return nil
	})},
	{"temperature", ollamaNonNegative("temperature", func(x float32, g *messages.GenerateRequest) { g.Sampling.Temperature = x })},
	{"top_k", ollamaInt("top_k", func(n int, g *messages.GenerateRequest, _ *ollamaLimits) *pipeline.Error {
		g.Sampling.TopK = max(n, 0) // <= 0: off, as llama.cpp
		return nil
	})},
	{"top_p", ollamaFloat("top_p", func(x float32, g *messages.GenerateRequest) { g.Sampling.TopP = x })},
	{"min_p", ollamaFloat("min_p", func(x float32, g *messages.GenerateRequest) { g.Sampling.MinP = x })},
	{"seed", ollamaInt("seed", func(n int, g *messages.GenerateRequest, _ *ollamaLimits) *pipeline.Error {
		g.Sampling.Seed, g.Sampling.HasSeed = uint64(n), n >= 0 // < 0: a random seed, as Ollama's -1
		if n < 0 {
			g.Sampling.Seed = 0
		}
		return nil
	})},
	{"stop", func(v json.RawMessage, g *messages.GenerateRequest, _ *ollamaLimits) *pipeline.Error {
		var stop pipeline.StopList
		if err := json.Unmarshal(v, &stop); err != nil {
			return pipeline.Errorf("stop", "option \"stop\" must be a string or an array of strings")
		}
		for _, s := range stop {
			if len(s) > maxStopBytes {
				return pipeline.Errorf("stop", "a stop string of %d bytes; at most %d", len(s), maxStopBytes)
			}
		}
		if len(stop) > maxStops { // Ollama has no limit of 4, as OpenAI's
			return pipeline.Errorf("stop", "%d stop strings; at most %d", len(stop), maxStops)
		}
		g.Stop = stop
		return nil
	}},
	{"repeat_penalty", ollamaFloat("repeat_penalty", func(x float32, g *messages.GenerateRequest) { g.Sampling.RepetitionPenalty = x })},
	{"presence_penalty", ollamaFloat("presence_penalty", func(x float32, g *messages.GenerateRequest) { g.Sampling.PresencePenalty = x })},
	{"frequency_penalty", ollamaFloat("frequency_penalty", func(x float32, g *messages.GenerateRequest) { g.Sampling.FrequencyPenalty = x })},
	{"repeat_last_n", ollamaInt("repeat_last_n", func(n int, g *messages.GenerateRequest, _ *ollamaLimits) *pipeline.Error {
		s := &g.Sampling
		switch {
		case n == 0: // llama.cpp and Ollama: the penalties are off
			s.RepetitionPenalty, s.PresencePenalty, s.FrequencyPenalty, s.PenaltyLastN = 0, 0, 0, 0
		case n == -1: // the whole context
			s.PenaltyLastN = 0
		case n < -1:
			return pipeline.Errorf("repeat_last_n", "option \"repeat_last_n\" %d: want -1 (the context), 0 (off) or a window", n)
		default:
			s.PenaltyLastN = n
		}
		return nil
	})},
	{"typical_p", ollamaFloat("typical_p", func(x float32, g *messages.GenerateRequest) { g.Sampling.TypicalP = x })},
	{"mirostat", ollamaInt("mirostat", func(n int, g *messages.GenerateRequest, _ *ollamaLimits) *pipeline.Error {
		if n < 0 || n > 2 {
			return pipeline.Errorf("mirostat", "option \"mirostat\" %d: want 0 (off), 1 or 2", n)
		}
		g.Sampling.Mirostat = n
		return nil
	})},
	// Not Ollama's, but refused as on the OpenAI routes rather than ignored.
	{"best_of", ollamaInt("best_of", func(n int, _ *messages.GenerateRequest, _ *ollamaLimits) *pipeline.Error {
		if n != 1 {
			return pipeline.Errorf("best_of", "best_of %d is not supported: troupe does not rank candidate completions", n)
		}
		return nil
	})},
	{"use_beam_search", func(v json.RawMessage, _ *messages.GenerateRequest, _ *ollamaLimits) *pipeline.Error {
		if string(v) != "false" {
			return pipeline.Errorf("use_beam_search", "use_beam_search is not supported: troupe has no beam search")
		}
		return nil
	}},
	// Inert while mirostat is 0, as in llama.cpp and Ollama.
	{"mirostat_tau", ollamaNonNegative("mirostat_tau", func(x float32, g *messages.GenerateRequest) { g.Sampling.MirostatTau = x })},
	{"mirostat_eta", ollamaNonNegative("mirostat_eta", func(x float32, g *messages.GenerateRequest) { g.Sampling.MirostatEta = x })},
}

// applyOllamaOptions sets g's sampling parameters from a request's options:
// Ollama's defaults first, then each option given. It returns the limits
// the options set and the names of the options it ignored, sorted: those
// unknown to Ollama, which Ollama ignores too, and those Ollama knows and
// troupe does not apply (num_keep, num_batch, num_gpu, main_gpu, use_mmap,
// num_thread, draft_num_predict: how Ollama loads a model and runs its
// batches, set when troupe's server starts, or what it keeps on a context
// shift, which troupe does not do). A value of the wrong type is a 400, as
// Ollama's.
func applyOllamaOptions(opts map[string]json.RawMessage, g *messages.GenerateRequest) (ollamaLimits, []string, *pipeline.Error) {
	g.Sampling = messages.SamplingParams{Temperature: ollamaTemperature, TopK: ollamaTopK, TopP: ollamaTopP,
		PenaltyLastN: ollamaRepeatLastN}
	var l ollamaLimits
	for _, o := range ollamaOptions {
		v, ok := opts[o.name]
		if !ok || string(v) == "null" {
			continue
		}
		if e := o.set(v, g, &l); e != nil {
			return l, nil, e
		}
	}
	mirostatDefaults(opts, &g.Sampling)
	var ignored []string
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if !slices.ContainsFunc(ollamaOptions, func(o ollamaOption) bool { return o.name == k }) {
			ignored = append(ignored, k)
		}
	}
	return l, ignored, nil
}

// mirostatDefaults gives mirostat Ollama's tau and eta where the options
// leave them out, and clears them while mirostat is off (they are inert).
func mirostatDefaults(opts map[string]json.RawMessage, s *messages.SamplingParams) {
	given := func(k string) bool { v, ok := opts[k]; return ok && string(v) != "null" }
	switch {
	case s.Mirostat == 0:
		s.MirostatTau, s.MirostatEta = 0, 0
	default:
		if !given("mirostat_tau") {
			s.MirostatTau = ollamaMirostatTau
		}
		if !given("mirostat_eta") {
			s.MirostatEta = ollamaMirostatEta
		}
	}
}

// ollamaInt is an integer option. A number with a fraction is truncated,
// as Ollama's (JSON numbers are floats to it).
func ollamaInt(name string, set func(int, *messages.GenerateRequest, *ollamaLimits) *pipeline.Error) func(json.RawMessage, *messages.GenerateRequest, *ollamaLimits) *pipeline.Error {
	return func(v json.RawMessage, g *messages.GenerateRequest, l *ollamaLimits) *pipeline.Error {
		var x float64
		if json.Unmarshal(v, &x) != nil {
			return pipeline.Errorf(name, "option %q must be of type integer", name)
		}
		if math.Abs(x) > 1<<53 {
			return pipeline.Errorf(name, "option %q %v is out of range", name, x)
		}
		return set(int(x), g, l)
	}
}

// ollamaFloat is a number option.
func ollamaFloat(name string, set func(float32, *messages.GenerateRequest)) func(json.RawMessage, *messages.GenerateRequest, *ollamaLimits) *pipeline.Error {
	return func(v json.RawMessage, g *messages.GenerateRequest, _ *ollamaLimits) *pipeline.Error {
		var x float64
		if json.Unmarshal(v, &x) != nil {
			return pipeline.Errorf(name, "option %q must be of type float32", name)
		}
		if math.Abs(x) > math.MaxFloat32 {
			return pipeline.Errorf(name, "option %q %v is out of range", name, x)
		}
		set(float32(x), g)
		return nil
	}
}

// ollamaNonNegative is ollamaFloat for an option that must not be negative
// (temperature: /v1 refuses one below 0 too).
func ollamaNonNegative(name string, set func(float32, *messages.GenerateRequest)) func(json.RawMessage, *messages.GenerateRequest, *ollamaLimits) *pipeline.Error {
	apply := ollamaFloat(name, set)
	return func(v json.RawMessage, g *messages.GenerateRequest, l *ollamaLimits) *pipeline.Error {
		if x := 0.0; json.Unmarshal(v, &x) == nil && x < 0 {
			return pipeline.Errorf(name, "option %q %v must not be negative", name, x)
		}
		return apply(v, g, l)
	}
}

// ollamaFormat maps Ollama's format, "json" or a JSON schema, to a grammar
// (nil: free text). Whether a schema compiles is the runtime's to say.
func ollamaFormat(v json.RawMessage) (*messages.Grammar, *pipeline.Error) {
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch s {
		case "":
			return nil, nil
		case "json":
			return &messages.Grammar{Kind: messages.GrammarJSONObject}, nil
		}
		return nil, pipeline.Errorf("format", "format %q: want \"json\" or a JSON schema object", s)
	}
	var schema map[string]json.RawMessage
	if json.Unmarshal(v, &schema) != nil {
		return nil, pipeline.Errorf("format", "format must be \"json\" or a JSON schema object")
	}
	return &messages.Grammar{Kind: messages.GrammarJSONSchema, Source: string(v)}, nil
}

// ollamaThink reads think: absent or null (nil), false, true, or a level
// ("low", "medium", "high", "max"), which counts as true and is returned.
func ollamaThink(v json.RawMessage) (think *bool, level string, e *pipeline.Error) {
	if len(v) == 0 || string(v) == "null" {
		return nil, "", nil
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return &b, "", nil
	}
	if json.Unmarshal(v, &level) == nil {
		switch level {
		case "low", "medium", "high", "max":
			b = true
			return &b, level, nil
		}
	}
	return nil, "", pipeline.Errorf("think", "think must be true, false, \"low\", \"medium\", \"high\" or \"max\", got %s", string(v))
}
