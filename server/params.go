package server

import (
	"math"
	"strconv"

	"github.com/troupe-llm/troupe/messages"
)

// samplingFields are the generation parameters completions and chat share.
type samplingFields struct {
	Model             string             `json:"model"`
	MaxTokens         *int               `json:"max_tokens"`
	Temperature       *float64           `json:"temperature"`
	TopP              *float64           `json:"top_p"`
	TopK              *int               `json:"top_k"`
	MinP              *float64           `json:"min_p"`
	N                 *int               `json:"n"`
	Stream            bool               `json:"stream"`
	StreamOptions     *streamOptions     `json:"stream_options"`
	Stop              stopField          `json:"stop"`
	StopTokenIDs      []int32            `json:"stop_token_ids"`
	Seed              *int64             `json:"seed"`
	PresencePenalty   *float64           `json:"presence_penalty"`
	FrequencyPenalty  *float64           `json:"frequency_penalty"`
	RepetitionPenalty *float64           `json:"repetition_penalty"`
	LogitBias         map[string]float64 `json:"logit_bias"`
	IgnoreEOS         bool               `json:"ignore_eos"`
	Priority          int                `json:"priority"`
	User              string             `json:"user"`
}

func (f *samplingFields) model() string { return f.Model }

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Limits on a request's parameters, each a 400 when exceeded. maxStops is
// OpenAI's limit on stop strings; the others bound the work and memory one
// request can ask for (a stop string is matched against each sequence's
// held-back text, a logit bias is applied at every step).
const (
	maxStops         = 4
	maxStopBytes     = 1024
	maxStopTokenIDs  = 1024
	maxLogitBias     = 1024
	maxChoices       = 128 // n times the number of prompts
	maxPromptsPerReq = 64
)

// toRequest checks the shared fields against their documented ranges and
// fills req; maxTokens is the chosen limit (the endpoint's default applied);
// logprobs is the number of alternatives per token, -1 for none.
func (f *samplingFields) toRequest(req *messages.GenerateRequest, vocab, logprobs int) *apiError {
	s := &req.Sampling
	s.Temperature, s.TopP = 1, 1 // OpenAI's defaults
	if f.Temperature != nil {
		if *f.Temperature < 0 || *f.Temperature > 2 || math.IsNaN(*f.Temperature) {
			return badRequest("temperature", "temperature %v is outside [0, 2]", *f.Temperature)
		}
		s.Temperature = float32(*f.Temperature)
	}
	if f.TopP != nil {
		if !(*f.TopP > 0 && *f.TopP <= 1) {
			return badRequest("top_p", "top_p %v is outside (0, 1]", *f.TopP)
		}
		s.TopP = float32(*f.TopP)
	}
	if f.TopK != nil {
		if *f.TopK < -1 {
			return badRequest("top_k", "top_k %d must be -1 (off), 0 (off) or positive", *f.TopK)
		}
		s.TopK = max(*f.TopK, 0)
	}
	if f.MinP != nil {
		if !(*f.MinP >= 0 && *f.MinP <= 1) {
			return badRequest("min_p", "min_p %v is outside [0, 1]", *f.MinP)
		}
		s.MinP = float32(*f.MinP)
	}
	for _, p := range []struct {
		name string
		v    *float64
		dst  *float32
	}{{"presence_penalty", f.PresencePenalty, &s.PresencePenalty}, {"frequency_penalty", f.FrequencyPenalty, &s.FrequencyPenalty}} {
		if p.v != nil {
			if !(*p.v >= -2 && *p.v <= 2) {
				return badRequest(p.name, "%s %v is outside [-2, 2]", p.name, *p.v)
			}
			*p.dst = float32(*p.v)
		}
	}
	if f.RepetitionPenalty != nil {
		if !(*f.RepetitionPenalty > 0 && *f.RepetitionPenalty <= 10) {
			return badRequest("repetition_penalty", "repetition_penalty %v is outside (0, 10]", *f.RepetitionPenalty)
		}
		s.RepetitionPenalty = float32(*f.RepetitionPenalty)
	}
	if s.PresencePenalty != 0 || s.FrequencyPenalty != 0 || (s.RepetitionPenalty != 0 && s.RepetitionPenalty != 1) {
		s.PenaltyLastN = 64 // llama.cpp's window
	}
	if len(f.LogitBias) > maxLogitBias {
		return badRequest("logit_bias", "logit_bias has %d entries; at most %d", len(f.LogitBias), maxLogitBias)
	}
	if len(f.LogitBias) > 0 {
		s.LogitBias = make(map[int32]float32, len(f.LogitBias))
		for k, v := range f.LogitBias {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil || id < 0 || int(id) >= vocab {
				return badRequest("logit_bias", "logit_bias key %q is not a token id of this model (0..%d)", k, vocab-1)
			}
			if !(v >= -100 && v <= 100) {
				return badRequest("logit_bias", "logit_bias value %v for token %s is outside [-100, 100]", v, k)
			}
			s.LogitBias[int32(id)] = float32(v)
			if v == -100 {
				s.LogitBias[int32(id)] = float32(math.Inf(-1)) // OpenAI: -100 bans the token
			}
		}
	}
	if f.Seed != nil {
		s.Seed, s.HasSeed = uint64(*f.Seed), true
	}
	if logprobs >= 0 {
		s.WantLogprob, s.Logprobs = true, logprobs
	}
	n := 1
	if f.N != nil {
		n = *f.N
		if n < 1 || n > maxChoices {
			return badRequest("n", "n %d is outside [1, %d]", n, maxChoices)
		}
	}
	req.N = n
	if len(f.Stop) > maxStops {
		return badRequest("stop", "at most %d stop strings, got %d", maxStops, len(f.Stop))
	}
	for _, st := range f.Stop {
		if st == "" {
			return badRequest("stop", "stop strings must not be empty")
		}
		if len(st) > maxStopBytes {
			return badRequest("stop", "a stop string of %d bytes; at most %d", len(st), maxStopBytes)
		}
	}
	req.Stop = f.Stop
	if len(f.StopTokenIDs) > maxStopTokenIDs {
		return badRequest("stop_token_ids", "%d stop token ids; at most %d", len(f.StopTokenIDs), maxStopTokenIDs)
	}
	for _, id := range f.StopTokenIDs {
		if id < 0 || int(id) >= vocab {
			return badRequest("stop_token_ids", "stop token %d is not a token id of this model", id)
		}
	}
	req.StopTokenIDs, req.IgnoreEOS, req.Priority = f.StopTokenIDs, f.IgnoreEOS, f.Priority
	return nil
}

// maxTokens resolves max_tokens (named param) for a prompt (named
// promptParam) of promptLen tokens in a context of ctxLen: def when absent (0: the rest of the context), and a 400
// when prompt plus max_tokens exceeds the context.
func maxTokens(v *int, param, promptParam string, def, promptLen, ctxLen int) (int, *apiError) {
	if promptLen >= ctxLen {
		return 0, badRequest(promptParam, "this model's maximum context length is %d tokens, but the prompt has %d tokens, leaving no room to generate", ctxLen, promptLen)
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
		return 0, badRequest(param, "this model's maximum context length is %d tokens; you requested %d tokens (%d in the prompt, %d for the completion)",
			ctxLen, promptLen+*v, promptLen, *v)
	}
	return *v, nil
}
