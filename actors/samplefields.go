package actors

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/sample"
)

// MaxDryBreakers is the most DRY sequence breakers a request may give.
const MaxDryBreakers = 64

// maxDryCache is how many breaker lists samplingAids keeps processed.
const maxDryCache = 16

// samplingAids holds what the runtime derives from the vocabulary for the
// samplers: DRY's breakers as token sequences (a scan of the vocabulary,
// cached by list), the end-of-generation tokens min_tokens bans, and the
// infill sampler's vocabulary.
type samplingAids struct {
	mu  sync.Mutex
	dry map[string][][]int32 // breaker list (NUL-joined) -> token sequences

	eogOnce sync.Once
	eog     []int32

	infillOnce sync.Once
	infill     *sample.InfillVocab // llama.cpp's infill sampler's, built on first use
}

// infillVocab returns the vocabulary of llama.cpp's infill sampler, built
// on first use (a pass over the vocabulary, a few bytes per token). The
// device actors call it.
func (r *Runtime) infillVocab() *sample.InfillVocab {
	a := &r.samplingAids
	a.infillOnce.Do(func() {
		eot := r.tok.EOT()
		if eot < 0 {
			eot = r.tok.EOS()
		}
		a.infill = sample.NewInfillVocab(r.tok.VocabSize(), func(id int32) []byte { return r.tok.TokenPiece(id, false) }, r.tok.IsEOG, eot)
	})
	return a.infill
}

// prepareSampling fills in what s needs from the vocabulary: DRY's breaker
// token sequences, when DRY is on.
func (r *Runtime) prepareSampling(s *messages.SamplingParams) {
	if s.DryMultiplier == 0 || s.DryBase < 1 || s.DryPenaltyLastN == 0 || len(s.DryBreakers) == 0 {
		return
	}
	s.DryBreakerTokens = r.dryBreakers(s.DryBreakers)
}

// dryBreakers returns the token sequences of a breaker list, from the cache
// when it holds them.
func (r *Runtime) dryBreakers(breakers []string) [][]int32 {
	key := strings.Join(breakers, "\x00")
	a := &r.samplingAids
	a.mu.Lock()
	seqs, ok := a.dry[key]
	a.mu.Unlock()
	if ok {
		return seqs
	}
	piece := func(id int32) string { return string(r.tok.TokenPiece(id, true)) }
	encode := func(s string) []int32 {
		ids, err := r.tok.Encode(s, false, false)
		if err != nil {
			return nil // the breaker's rest does not encode: only its head counts
		}
		return ids
	}
	seqs = sample.DryBreakerSequences(breakers, r.tok.VocabSize(), piece, encode)
	a.mu.Lock()
	if a.dry == nil || len(a.dry) >= maxDryCache {
		a.dry = make(map[string][][]int32)
	}
	a.dry[key] = seqs
	a.mu.Unlock()
	return seqs
}

// endBanMask returns the mask a sequence samples under until it has
// min_tokens tokens: every token but the end-of-generation ones (unless
// ignoreEOS) and the stop token ids. It is the sequence's to keep; nil when
// nothing is banned.
func (r *Runtime) endBanMask(ignoreEOS bool, stopIDs []int32) []uint64 {
	a := &r.samplingAids
	a.eogOnce.Do(func() {
		for id := range int32(r.tok.VocabSize()) {
			if r.tok.IsEOG(id) {
				a.eog = append(a.eog, id)
			}
		}
	})
	var ban []int32
	if !ignoreEOS {
		ban = append(ban, a.eog...)
	}
	ban = append(ban, stopIDs...)
	if len(ban) == 0 {
		return nil
	}
	n := r.VocabSize()
	mask := make([]uint64, (n+63)/64)
	for i := range mask {
		mask[i] = ^uint64(0)
	}
	if n%64 != 0 {
		mask[len(mask)-1] = 1<<(n%64) - 1
	}
	for _, id := range ban {
		if id >= 0 && int(id) < n {
			mask[id/64] &^= 1 << (id % 64)
		}
	}
	return mask
}

// andMask returns the tokens both masks allow (nil allows every token). It
// returns grammar unchanged when the two have no token in common: the
// grammar then wants the output to end, and min_tokens yields to it.
func andMask(grammar, ban []uint64) []uint64 {
	switch {
	case ban == nil:
		return grammar
	case grammar == nil:
		return ban
	}
	out := slices.Clone(grammar)
	any := false
	for i := range out {
		if i < len(ban) {
			out[i] &= ban[i]
		}
		any = any || out[i] != 0
	}
	if !any {
		return grammar
	}
	return out
}

// reasoningMarkers tokenizes a reasoning budget's markers as llama-server
// does (special tokens' text parsed): the start and end sequences, and the
// tokens forced when the budget is spent (the message, then the end).
func (r *Runtime) reasoningMarkers(rb *messages.ReasoningBudget) (start, end, forced []int32, err error) {
	encode := func(field, text string) ([]int32, error) {
		ids, err := r.tok.Encode(text, false, true)
		if err == nil && len(ids) == 0 && text != "" {
			err = errors.New("no tokens")
		}
		if err != nil {
			return nil, &RequestError{Param: "reasoning_budget", Msg: fmt.Sprintf("reasoning budget %s %q: %v", field, text, err)}
		}
		return ids, nil
	}
	switch {
	case rb.Tokens < 0:
		return nil, nil, nil, &RequestError{Param: "reasoning_budget", Msg: fmt.Sprintf("reasoning budget of %d tokens is negative", rb.Tokens)}
	case rb.Start == "" || rb.End == "":
		return nil, nil, nil, &RequestError{Param: "reasoning_budget", Msg: "a reasoning budget needs the markers that open and close a section; the model's template has none"}
	}
	if start, err = encode("start", rb.Start); err != nil {
		return nil, nil, nil, err
	}
	if end, err = encode("end", rb.End); err != nil {
		return nil, nil, nil, err
	}
	msg, err := encode("message", rb.Message)
	if err != nil {
		return nil, nil, nil, err
	}
	return start, end, append(msg, end...), nil
}

// reasoningBudget returns one choice's reasoning budget state, with the
// prompt's open section counted; nil when the request has no budget.
func (r *Runtime) reasoningBudget(rb *messages.ReasoningBudget, prompt []int32) (*sample.ReasoningBudget, error) {
	if rb == nil {
		return nil, nil
	}
	start, end, forced, err := r.reasoningMarkers(rb)
	if err != nil {
		return nil, err
	}
	complete := func(id int32) bool { return utf8Complete(r.tok.TokenPiece(id, false)) }
	b := sample.NewReasoningBudget([][]int32{start}, [][]int32{end}, forced, rb.Tokens, complete)
	b.Prefill(prompt)
	return b, nil
}

// utf8Complete reports whether p does not end inside a UTF-8 character, as
// llama.cpp's common_utf8_is_complete.
func utf8Complete(p []byte) bool {
	for i := 1; i <= min(4, len(p)); i++ {
		c := p[len(p)-i]
		if c&0xC0 != 0x80 {
			want := 1
			switch {
			case c >= 0xF0:
				want = 4
			case c >= 0xE0:
				want = 3
			case c >= 0xC0:
				want = 2
			}
			return i >= want
		}
	}
	return len(p) == 0
}

// onlyMask returns the mask that allows id alone.
func (r *Runtime) onlyMask(id int32) []uint64 {
	mask := make([]uint64, (r.VocabSize()+63)/64)
	if id >= 0 && int(id) < r.VocabSize() {
		mask[id/64] = 1 << (id % 64)
	}
	return mask
}
