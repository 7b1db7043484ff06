package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/troupe-llm/troupe/grammar"
)

// constraint is a sequence's grammar state: its matcher and the masks it
// sends with its step requests. It lives on the sequence's goroutine.
type constraint struct {
	m         *grammar.Matcher
	v         *grammar.Vocab
	ignoreEOS bool // the batcher does not stop on end-of-generation tokens: never allow them
	stats     *grammarCounters
}

// errNoToken is a grammar state that no token of the vocabulary continues.
var errNoToken = errors.New("grammar: no token of the vocabulary can continue the output here")

// grammarFault reports a sequence's grammar error that is the request's
// fault: its grammar did not compile, passed a bound of grammar, or
// allows no token of the model's vocabulary.
func grammarFault(err error) bool {
	return errors.Is(err, ErrInvalidRequest) || errors.Is(err, grammar.ErrTooComplex) || errors.Is(err, errNoToken)
}

func newConstraint(res *grammarCompiled, ignoreEOS bool, stats *grammarCounters) (*constraint, error) {
	m, err := res.grammar.NewMatcher(res.vocab)
	if err != nil {
		return nil, err
	}
	return &constraint{m: m, v: res.vocab, ignoreEOS: ignoreEOS, stats: stats}, nil
}

// accept advances the matcher over a sampled token; done reports that the
// grammar has reached its end (the choice stops).
func (c *constraint) accept(tok int32) (done bool, err error) {
	if err := c.m.Accept(tok); err != nil {
		return false, fmt.Errorf("the sampled token %d does not follow the grammar: %w", tok, err)
	}
	return c.m.Done(), nil
}

// mask returns the tokens allowed next, a new slice (the batcher keeps it
// until the next request, and the device reads it).
func (c *constraint) mask() ([]uint64, error) { return c.maskOf(c.m) }

// maskOf is mask for matcher m: c's own, or a clone of it that a draft
// advanced.
func (c *constraint) maskOf(m *grammar.Matcher) ([]uint64, error) {
	start := time.Now()
	dst := make([]uint64, c.v.MaskWords())
	cached, err := m.FillMask(dst)
	c.stats.masks.Add(1)
	c.stats.maskNanos.Add(time.Since(start).Nanoseconds())
	if cached {
		c.stats.maskHits.Add(1)
	}
	if err != nil {
		return nil, err
	}
	if c.ignoreEOS {
		for _, e := range c.v.EOG() {
			dst[e>>6] &^= 1 << (e & 63)
		}
	}
	for _, w := range dst {
		if w != 0 {
			return dst, nil
		}
	}
	return nil, errNoToken
}
