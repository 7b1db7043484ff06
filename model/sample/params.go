package sample

import (
	"errors"
	"fmt"
	"math"
)

// MaxLogprobs is the largest number of top alternatives a Sampler reports per
// token, the limit of OpenAI's top_logprobs.
const MaxLogprobs = 20

var (
	// ErrInvalidParams is wrapped by every error Validate returns, and by
	// Sample when the Params do not fit the vocabulary (a logit bias for a
	// token past its end).
	ErrInvalidParams = errors.New("sample: invalid params")
	// ErrBadLogits is returned by Sample when a logit is NaN or +Inf, or the
	// row is empty.
	ErrBadLogits = errors.New("sample: bad logits")
	// ErrNoCandidates is returned by Sample when logit bias and penalties
	// leave every token at -Inf, so there is nothing to pick.
	ErrNoCandidates = errors.New("sample: every token is banned")
)

// Params are one sequence's sampling parameters. The zero value is greedy.
//
// Validate is permissive: it rejects only values no sampler can use. The
// stricter ranges of an HTTP API (OpenAI's temperature in [0, 2], penalties
// in [-2, 2], bias in [-100, 100]) are the front end's business.
type Params struct {
	// Temperature divides the logits before the draw. <= 0 means greedy:
	// the argmax, lowest id on ties, and top-k, top-p and min-p are ignored.
	Temperature float32
	// TopK keeps the TopK highest logits. <= 0, or >= the vocabulary size,
	// disables it.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probability
	// (at temperature 1, after top-k) adds up to at least TopP. 0 or 1
	// disables it.
	TopP float32
	// MinP drops tokens whose probability is below MinP times that of the
	// most likely token. 0 disables it.
	MinP float32

	// RepetitionPenalty divides positive logits and multiplies the others
	// of tokens seen in the penalty window (llama.cpp, CTRL). 0 or 1
	// disables it; values in (0, 1) encourage repetition.
	RepetitionPenalty float32
	// PresencePenalty is subtracted once from the logit of every token seen
	// in the penalty window.
	PresencePenalty float32
	// FrequencyPenalty is subtracted from the logit of every token seen in
	// the penalty window, once per occurrence.
	FrequencyPenalty float32
	// PenaltyLastN is how many of the most recent history tokens the
	// penalties look at; 0 means the whole history given to Sample.
	// llama.cpp's default of 64 is the caller's to apply.
	PenaltyLastN int

	// MinKeep is the fewest tokens typical-p, top-p, min-p and XTC may
	// leave (llama.cpp's min_keep); 0 or 1 means at least one.
	MinKeep int
	// TypicalP is locally typical sampling's mass: keep the tokens whose
	// surprise is closest to the distribution's entropy until their
	// probability adds up to more than TypicalP. 0 or 1 disables it.
	TypicalP float32
	// XTCProbability is the chance, per token, that XTC ("exclude top
	// choices") runs: it then drops every token whose probability is at
	// least XTCThreshold except the least likely of them. 0 disables it, as
	// does a threshold above 0.5.
	XTCProbability float32
	XTCThreshold   float32

	// DRY ("don't repeat yourself") penalizes a token that would extend a
	// run of tokens already seen earlier in the window by
	// DryMultiplier * DryBase^(run length - DryAllowedLength), for runs of
	// at least DryAllowedLength. DryMultiplier 0 or DryBase < 1 disables it.
	DryMultiplier    float32
	DryBase          float32
	DryAllowedLength int
	// DryPenaltyLastN is how many of the most recent history tokens DRY
	// looks at: 0 disables it, -1 means the whole history.
	DryPenaltyLastN int
	// DryBreakers are the sequence breakers as token sequences in text
	// order: a head token and the tokens that follow it (llama.cpp's
	// processed breakers; see DryBreakerSequences). A run never extends
	// across one, and a single-token breaker is never penalized.
	DryBreakers [][]int32

	// Infill, when set, runs llama.cpp's infill sampler (infill.go) on the
	// vocabulary it describes, after XTC: for fill-in-the-middle, it ends
	// the output when end-of-generation tokens are likely enough and keeps
	// few, merged, candidates otherwise. Greedy sampling ignores it.
	Infill *InfillVocab

	// Mirostat replaces the sampler chain with llama.cpp's mirostat: 1 is
	// version 1 (its top-k from an estimated Zipf exponent), 2 is version 2
	// (a cut at surprise mu); 0 turns it off. As in llama-server, only logit
	// bias and temperature run before it: the penalties, DRY, top-k,
	// typical-p, top-p, min-p, XTC and Infill do not. It draws from its own
	// Mersenne Twister as llama.cpp's, so the same seed gives the same
	// tokens. Greedy sampling (Temperature <= 0) ignores it.
	Mirostat int
	// MirostatTau is the target surprise, -log2 p of the drawn token (llama.cpp's
	// default 5); mu starts at twice it. MirostatEta is how fast mu follows
	// the error (llama.cpp's default 0.1).
	MirostatTau float32
	MirostatEta float32

	// LogitBias is added to the logits of the given tokens; -Inf bans a
	// token. New copies it, so later changes to the map have no effect.
	LogitBias map[int32]float32

	// Seed seeds the sampler's random number generator when HasSeed is
	// set; otherwise the seed comes from a random source.
	Seed    uint64
	HasSeed bool

	// WantLogprob asks for the chosen token's log-probability.
	WantLogprob bool
	// Logprobs is how many most likely alternatives to report with each
	// token, in [0, MaxLogprobs]. Logprobs > 0 implies WantLogprob.
	Logprobs int
}

// Validate reports the first impossible value in p:
//   - Temperature, TopP, MinP, the penalties and the biases must not be NaN;
//     none but a bias may be infinite, and a bias may only be -Inf (a ban).
//   - TopP and MinP must lie in [0, 1].
//   - RepetitionPenalty must not be negative.
//   - PenaltyLastN must not be negative.
//   - LogitBias keys must not be negative (the upper bound is checked by
//     Sample, which knows the vocabulary size).
//   - Logprobs must lie in [0, MaxLogprobs].
//   - Mirostat must be 0, 1 or 2, and its tau and eta finite.
//
// Everything else is allowed: any TopK (<= 0 disables it), any finite
// temperature (<= 0 is greedy), penalties of either sign.
func (p Params) Validate() error {
	finite := []struct {
		name string
		v    float32
	}{
		{"temperature", p.Temperature},
		{"top_p", p.TopP},
		{"min_p", p.MinP},
		{"repetition_penalty", p.RepetitionPenalty},
		{"presence_penalty", p.PresencePenalty},
		{"frequency_penalty", p.FrequencyPenalty},
		{"typical_p", p.TypicalP},
		{"xtc_probability", p.XTCProbability},
		{"xtc_threshold", p.XTCThreshold},
		{"dry_multiplier", p.DryMultiplier},
		{"dry_base", p.DryBase},
		{"mirostat_tau", p.MirostatTau},
		{"mirostat_eta", p.MirostatEta},
	}
	for _, f := range finite {
		if !isFinite(f.v) {
			return fmt.Errorf("%w: %s is %v", ErrInvalidParams, f.name, f.v)
		}
	}
	for _, err := range []error{
		inUnitInterval("top_p", p.TopP),
		inUnitInterval("min_p", p.MinP),
		nonNegative("repetition_penalty", p.RepetitionPenalty),
		nonNegative("penalty_last_n", p.PenaltyLastN),
		inUnitInterval("typical_p", p.TypicalP),
		inUnitInterval("xtc_probability", p.XTCProbability),
		inUnitInterval("xtc_threshold", p.XTCThreshold),
		nonNegative("min_keep", p.MinKeep),
		nonNegative("dry_multiplier", p.DryMultiplier),
		nonNegative("dry_allowed_length", p.DryAllowedLength),
	} {
		if err != nil {
			return err
		}
	}
	switch {
	case p.DryPenaltyLastN < -1:
		return fmt.Errorf("%w: dry_penalty_last_n %d: want -1 (the whole history), 0 (off) or a window", ErrInvalidParams, p.DryPenaltyLastN)
	case p.Mirostat < 0 || p.Mirostat > 2:
		return fmt.Errorf("%w: mirostat %d: want 0 (off), 1 or 2", ErrInvalidParams, p.Mirostat)
	case p.Logprobs < 0 || p.Logprobs > MaxLogprobs:
		return fmt.Errorf("%w: logprobs %d is outside [0, %d]", ErrInvalidParams, p.Logprobs, MaxLogprobs)
	}
	// Report the lowest bad token, so the message does not depend on map order.
	var bad int32
	found := false
	for id, b := range p.LogitBias {
		if (id < 0 || math.IsNaN(float64(b)) || math.IsInf(float64(b), 1)) && (!found || id < bad) {
			bad, found = id, true
		}
	}
	switch {
	case !found:
		return nil
	case bad < 0:
		return fmt.Errorf("%w: logit bias for negative token %d", ErrInvalidParams, bad)
	default:
		return fmt.Errorf("%w: logit bias for token %d is %v", ErrInvalidParams, bad, p.LogitBias[bad])
	}
}

// Argmax reports whether Sample with p returns the lowest index of the
// largest logit and nothing else (greedy, no bias, no penalties, no
// logprobs), so a device holding the logits may pick the token itself.
// Sample still reports rows with a NaN, +Inf or only -Inf as errors.
func (p Params) Argmax() bool {
	return p.greedy() && len(p.LogitBias) == 0 && !p.penalties() && !p.dry() && !p.logprobs()
}

func (p Params) greedy() bool     { return p.Temperature <= 0 }
func (p Params) topK(n int) bool  { return p.TopK > 0 && p.TopK < n }
func (p Params) topP() bool       { return p.TopP > 0 && p.TopP < 1 }
func (p Params) minP() bool       { return p.MinP > 0 }
func (p Params) repetition() bool { return p.RepetitionPenalty != 0 && p.RepetitionPenalty != 1 }

func (p Params) penalties() bool {
	return p.repetition() || p.PresencePenalty != 0 || p.FrequencyPenalty != 0
}

func (p Params) typical() bool { return p.TypicalP > 0 && p.TypicalP < 1 }
func (p Params) xtc() bool     { return p.XTCProbability > 0 && p.XTCThreshold <= 0.5 }

// dry reports whether DRY runs (llama.cpp: multiplier != 0, base >= 1,
// window != 0).
func (p Params) dry() bool {
	return p.DryMultiplier != 0 && p.DryBase >= 1 && p.DryPenaltyLastN != 0
}

// chain reports whether truncation needs llama.cpp's general chain (typical,
// XTC, min_keep, infill), which sorts the candidates, rather than the fast paths.
func (p Params) chain() bool { return p.typical() || p.xtc() || p.MinKeep > 1 || p.Infill != nil }

func (p Params) logprobs() bool { return p.WantLogprob || p.Logprobs > 0 }

// inUnitInterval is the error of a parameter name of value v outside
// [0, 1], or nil.
func inUnitInterval(name string, v float32) error {
	if v < 0 || v > 1 {
		return fmt.Errorf("%w: %s %v is outside [0, 1]", ErrInvalidParams, name, v)
	}
	return nil
}

// nonNegative is the error of a parameter name of negative value v, or nil.
func nonNegative[T int | float32](name string, v T) error {
	if v < 0 {
		return fmt.Errorf("%w: %s %v is negative", ErrInvalidParams, name, v)
	}
	return nil
}

func isFinite(x float32) bool {
	return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
}
