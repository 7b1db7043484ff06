package actors

import (
	"errors"
	"fmt"

	"github.com/troupe-llm/troupe/messages"
)

// ErrInvalidRequest is wrapped by Stream's error for a request that is
// malformed or can never be served (a client error).
var ErrInvalidRequest = errors.New("invalid request")

// MaxN is the most choices one request may ask for (the HTTP API's limit on
// n, and on n times the number of prompts, too).
const MaxN = 128

// RequestError is why Stream refuses a request: Param names the field at
// fault in the OpenAI API's words ("prompt", "n", "logit_bias", ...; "" when
// no one field is), Msg what is wrong with it. It wraps ErrInvalidRequest.
type RequestError struct {
	Param string
	Msg   string
}

func (e *RequestError) Error() string { return ErrInvalidRequest.Error() + ": " + e.Msg }

func (e *RequestError) Unwrap() error { return ErrInvalidRequest }

// Check reports whether Stream would accept req (a *RequestError when not),
// without running it or changing it: a front end checks a request before
// it answers, a cluster node before it sends the request to another node.
//
// This is the one place a request's own validity is checked: its token ids
// against the vocabulary (prompt, logit_bias, stop_token_ids), its stop
// strings, n, max_tokens, its sampling parameters, and whether its tokens
// fit a device. A front end checks only the shape and ranges of its own
// API (the HTTP server: OpenAI's ranges and size limits).
func (r *Runtime) Check(req *messages.GenerateRequest) error { return r.check(req) }

func (r *Runtime) check(req *messages.GenerateRequest) error {
	vocab := r.model.Config.VocabSize
	bad := func(param, format string, args ...any) error {
		return &RequestError{Param: param, Msg: fmt.Sprintf(format, args...)}
	}
	if c := &r.model.Config; c.Encoder {
		return bad("", "the served model (%s) computes embeddings only; generation needs a decoder model: use /v1/embeddings or /api/embed", c.Arch)
	}
	switch {
	case len(req.Prompt) == 0:
		return bad("prompt", "empty prompt")
	case req.N < 0 || req.N > MaxN:
		return bad("n", "n %d is outside [1, %d]", req.N, MaxN)
	case req.MaxTokens < 0:
		return bad("max_tokens", "max_tokens %d is negative", req.MaxTokens)
	case len(req.Prompt) >= r.cfg.MaxModelLen:
		return bad("prompt", "the prompt has %d tokens; the context holds %d, with room for at least one more", len(req.Prompt), r.cfg.MaxModelLen)
	}
	for i, id := range req.Prompt {
		if id < 0 || int(id) >= vocab {
			return bad("prompt", "prompt token %d: id %d is outside the vocabulary (%d)", i, id, vocab)
		}
	}
	if id, ok := lowestOutside(req.Sampling.LogitBias, vocab); ok {
		return bad("logit_bias", "logit_bias token %d is outside the vocabulary (0..%d)", id, vocab-1)
	}
	for _, id := range req.StopTokenIDs {
		if id < 0 || int(id) >= vocab {
			return bad("stop_token_ids", "stop token %d is outside the vocabulary (0..%d)", id, vocab-1)
		}
	}
	for _, s := range req.Stop {
		if s == "" {
			return bad("stop", "stop strings must not be empty")
		}
	}
	switch {
	case req.MinTokens < 0:
		return bad("min_tokens", "min_tokens %d is negative", req.MinTokens)
	case req.MaxTokens > 0 && req.MinTokens > req.MaxTokens:
		return bad("min_tokens", "min_tokens %d is more than max_tokens %d", req.MinTokens, req.MaxTokens)
	case req.MaxPredictNanos < 0:
		return bad("t_max_predict_ms", "t_max_predict_ms is negative")
	case len(req.Sampling.DryBreakers) > MaxDryBreakers:
		return bad("dry_sequence_breakers", "%d DRY sequence breakers; at most %d", len(req.Sampling.DryBreakers), MaxDryBreakers)
	}
	if err := SampleParams(&req.Sampling).Validate(); err != nil {
		return bad("", "%v", err)
	}
	if err := r.checkImages(req); err != nil { // request_images.go
		return err
	}
	if err := r.checkLoRA(req.LoRA); err != nil {
		return err
	}
	if err := r.checkSpeculative(req.Speculative); err != nil {
		return err
	}
	if rb := req.ReasoningBudget; rb != nil {
		if _, _, _, err := r.reasoningMarkers(rb); err != nil {
			return err
		}
	}
	maxLen := r.cfg.MaxModelLen
	if req.MaxTokens > 0 {
		maxLen = min(maxLen, len(req.Prompt)+req.MaxTokens)
	}
	sc := r.cfg.schedConfig(nil)
	sc.Window = r.kvWindow
	if need := sc.BlocksNeeded(maxLen); need > r.cfg.NumBlocks {
		return bad("", "%d tokens need %d KV blocks; a device has %d", maxLen-1, need, r.cfg.NumBlocks)
	}
	return nil
}

// lowestOutside returns the lowest token id of bias outside [0, vocab), so
// that the error does not depend on the map's order.
func lowestOutside(bias map[int32]float32, vocab int) (id int32, found bool) {
	for k := range bias {
		if (k < 0 || int(k) >= vocab) && (!found || k < id) {
			id, found = k, true
		}
	}
	return id, found
}
