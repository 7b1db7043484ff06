package server

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/openai"
)

// samplingFields are a body's generation fields as /infill reads them
// (openai.Common: the pipeline's sampling part and the fields of the
// route around it), with what the params table finds out.
type samplingFields struct {
	openai.Common

	unlimited    bool   // n_predict -1: no default limit on the tokens
	grammarParam string // the field the request's Grammar comes from
}

func (f *samplingFields) model() string { return f.Model }

// Limits on a request's parameters, each a 400 when exceeded. maxStops is
// troupe's bound on stop strings (OpenAI's is 4; llama-server and vLLM set
// none, and editor clients send long lists); the others bound the work and memory one
// request can ask for (a stop string is matched against each sequence's
// held-back text, a logit bias is applied at every step). n, and n times
// the number of prompts, are bounded by actors.MaxN.
const (
	maxStops         = 256
	maxStopBytes     = 1024
	maxStopTokenIDs  = 1024
	maxLogitBias     = 1024
	maxPromptsPerReq = 64
)

// A param is one field of samplingFields: apply checks the body's value,
// when it has one, against the range the API documents, and sets it on the
// request.
//
// Only the API's own rules are here: the JSON shape, OpenAI's ranges, the
// size limits above. What makes a request valid for the model (token ids
// inside the vocabulary, no empty stop string, n up to actors.MaxN, ...) is
// the runtime's to check, in one place for every front end
// (actors.Runtime.Check, whose errors name the param too).
type param struct {
	name  string
	apply func(f *samplingFields, req *messages.GenerateRequest) *apiError
}

// params is the table of the fields completions and chat share, in the
// order they are checked.
var params = []param{
	floatIn("temperature", func(f *samplingFields) *float64 { return f.Temperature }, span{0, 2, false},
		func(s *messages.SamplingParams, v float32) { s.Temperature = v }),
	floatIn("top_p", func(f *samplingFields) *float64 { return f.TopP }, span{0, 1, true},
		func(s *messages.SamplingParams, v float32) { s.TopP = v }),
	{"top_k", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.TopK != nil {
			if *f.TopK < -1 {
				return badRequest("top_k", "top_k %d must be -1 (off), 0 (off) or positive", *f.TopK)
			}
			req.Sampling.TopK = max(*f.TopK, 0)
		}
		return nil
	}},
	floatIn("min_p", func(f *samplingFields) *float64 { return f.MinP }, span{0, 1, false},
		func(s *messages.SamplingParams, v float32) { s.MinP = v }),
	floatIn("presence_penalty", func(f *samplingFields) *float64 { return f.PresencePenalty }, span{-2, 2, false},
		func(s *messages.SamplingParams, v float32) { s.PresencePenalty = v }),
	floatIn("frequency_penalty", func(f *samplingFields) *float64 { return f.FrequencyPenalty }, span{-2, 2, false},
		func(s *messages.SamplingParams, v float32) { s.FrequencyPenalty = v }),
	floatIn("repetition_penalty", func(f *samplingFields) *float64 { return f.RepetitionPenalty }, span{0, 10, true},
		func(s *messages.SamplingParams, v float32) { s.RepetitionPenalty = v }),
	{"logit_bias", applyLogitBias},
	{"seed", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.Seed != nil {
			req.Sampling.Seed, req.Sampling.HasSeed = uint64(*f.Seed), true
		}
		return nil
	}},
	{"n", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		req.N = 1
		if f.N != nil {
			if *f.N < 1 || *f.N > actors.MaxN {
				return badRequest("n", "n %d is outside [1, %d]", *f.N, actors.MaxN)
			}
			req.N = *f.N
		}
		return nil
	}},
	{"stop", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if len(f.Stop) > maxStops {
			return badRequest("stop", "at most %d stop strings, got %d", maxStops, len(f.Stop))
		}
		for _, st := range f.Stop {
			if len(st) > maxStopBytes {
				return badRequest("stop", "a stop string of %d bytes; at most %d", len(st), maxStopBytes)
			}
		}
		req.Stop = f.Stop
		return nil
	}},
	{"stop_token_ids", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if len(f.StopTokenIDs) > maxStopTokenIDs {
			return badRequest("stop_token_ids", "%d stop token ids; at most %d", len(f.StopTokenIDs), maxStopTokenIDs)
		}
		req.StopTokenIDs = f.StopTokenIDs
		return nil
	}},
	{"ignore_eos", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		req.IgnoreEOS = f.IgnoreEOS
		return nil
	}},
	{"priority", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		req.Priority = f.Priority
		return nil
	}},
	{"response_format", applyConstraint}, // and the other constrainedFields
}

// allParams are params, then llama-server's and vLLM's fields (n_predict
// first among them: it sets max_tokens, which the caller reads after).
var allParams = slices.Concat(params, llamaParams, budgetParams)

// span is a range of a number parameter: [lo, hi], or (lo, hi] when open.
type span struct {
	lo, hi float64
	open   bool
}

func (s span) contains(v float64) bool { return (v > s.lo || !s.open && v == s.lo) && v <= s.hi } // NaN: no

func (s span) String() string {
	if s.open {
		return fmt.Sprintf("(%v, %v]", s.lo, s.hi)
	}
	return fmt.Sprintf("[%v, %v]", s.lo, s.hi)
}

// floatIn is the param name: a number in r, set as a float32 by set.
func floatIn(name string, get func(*samplingFields) *float64, r span, set func(*messages.SamplingParams, float32)) param {
	return param{name, func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if v := get(f); v != nil {
			if !r.contains(*v) {
				return badRequest(name, "%s %v is outside %v", name, *v, r)
			}
			set(&req.Sampling, float32(*v))
		}
		return nil
	}}
}

// applyLogitBias parses logit_bias's keys as token ids and checks its
// values; -100 bans the token, as OpenAI's. Whether an id is in the
// vocabulary is the runtime's to check.
func applyLogitBias(f *samplingFields, req *messages.GenerateRequest) *apiError {
	if len(f.LogitBias) > maxLogitBias {
		return badRequest("logit_bias", "logit_bias has %d entries; at most %d", len(f.LogitBias), maxLogitBias)
	}
	if len(f.LogitBias) == 0 {
		return nil
	}
	bias := make(map[int32]float32, len(f.LogitBias))
	for _, k := range slices.Sorted(maps.Keys(f.LogitBias)) { // the first bad key, whatever the map's order
		v := f.LogitBias[k]
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return badRequest("logit_bias", "logit_bias key %q is not a token id", k)
		}
		if !(v >= -100 && v <= 100) {
			return badRequest("logit_bias", "logit_bias value %v for token %s is outside [-100, 100]", v, k)
		}
		bias[int32(id)] = float32(v)
		if v == -100 {
			bias[int32(id)] = float32(math.Inf(-1))
		}
	}
	req.Sampling.LogitBias = bias
	return nil
}

// toRequest fills req from the shared fields, each checked against its
// documented range (the params table), then OpenAI's defaults and what
// follows from the fields; logprobs is the number of alternatives per
// token, -1 for none. The caller sets MaxTokens, then has the runtime check
// the request.
func (f *samplingFields) toRequest(req *messages.GenerateRequest, logprobs int) *apiError {
	req.Sampling.Temperature, req.Sampling.TopP = 1, 1 // OpenAI's defaults
	for _, p := range allParams {
		if e := p.apply(f, req); e != nil {
			return e
		}
	}
	llamaDefaults(f, &req.Sampling)
	s := &req.Sampling
	if s.PresencePenalty != 0 || s.FrequencyPenalty != 0 || (s.RepetitionPenalty != 0 && s.RepetitionPenalty != 1) {
		s.PenaltyLastN = 64 // llama.cpp's window
	}
	if logprobs >= 0 {
		s.WantLogprob, s.Logprobs = true, logprobs
	}
	return nil
}

// maxTokens resolves max_tokens (named param) for a prompt (named
// promptParam) of promptLen tokens in a context of ctxLen: def when absent (0: the rest of the context), and a 400
// when prompt plus max_tokens exceeds the context.
func maxTokens(v *int, param, promptParam string, def, promptLen, ctxLen int) (int, *apiError) {
	if promptLen >= ctxLen {
		return 0, tooLong(promptParam, "this model's maximum context length is %d tokens, but the prompt has %d tokens, leaving no room to generate", ctxLen, promptLen)
	}
	if v == nil {
		if def == 0 {
			return ctxLen - promptLen, nil
		}
		return min(def, ctxLen-promptLen), nil
	}
	if *v < 1 {
		return 0, badRequest(param, "%s %d must be at least 1", param, *v)
	}
	if promptLen+*v > ctxLen {
		return 0, tooLong(param, "this model's maximum context length is %d tokens; you requested %d tokens (%d in the prompt, %d for the completion)",
			ctxLen, promptLen+*v, promptLen, *v)
	}
	return *v, nil
}
