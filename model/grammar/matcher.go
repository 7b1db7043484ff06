package grammar

import (
	"errors"
	"fmt"
)

// ErrRejected is returned when a token or byte string is not allowed.
var ErrRejected = errors.New("grammar: rejected")

// Matcher is one sequence's position in a grammar: the per-sequence state a
// runtime keeps. It belongs to one goroutine; Clone forks it (for n > 1
// choices sharing a prompt).
type Matcher struct {
	g     *Grammar
	v     *Vocab
	state int32
	ended bool // an end-of-generation token was accepted
}

// NewMatcher starts a matcher at the beginning of the grammar. v may be nil
// for a matcher fed only with AcceptBytes.
func (g *Grammar) NewMatcher(v *Vocab) (*Matcher, error) {
	g.m.mu.Lock()
	defer g.m.mu.Unlock()
	s, err := g.m.startState()
	if err != nil {
		return nil, err
	}
	if s == dead {
		return nil, fmt.Errorf("grammar: the root rule matches nothing")
	}
	return &Matcher{g: g, v: v, state: s}, nil
}

// Clone returns an independent copy of m.
func (m *Matcher) Clone() *Matcher { c := *m; return &c }

// Accept advances the matcher by one sampled token. A token the grammar does
// not allow leaves the matcher as it was and returns ErrRejected. An
// end-of-generation token is allowed only where the grammar may end, and
// ends it.
func (m *Matcher) Accept(tok int32) error {
	if m.v == nil || tok < 0 || int(tok) >= m.v.Size() {
		return fmt.Errorf("grammar: token %d outside the vocabulary", tok)
	}
	if m.v.IsEOG(tok) {
		if m.ended || !m.CanEnd() {
			return fmt.Errorf("%w: end of generation before the grammar may end", ErrRejected)
		}
		m.ended = true
		return nil
	}
	p := m.v.pieces[tok]
	if len(p) == 0 {
		return fmt.Errorf("%w: token %d has no bytes", ErrRejected, tok)
	}
	return m.AcceptBytes(p)
}

// AcceptBytes advances the matcher by raw bytes (all or nothing).
func (m *Matcher) AcceptBytes(b []byte) error {
	if m.ended {
		return fmt.Errorf("%w: input after the end", ErrRejected)
	}
	mc := m.g.m
	mc.mu.Lock()
	defer mc.mu.Unlock()
	s := m.state
	for i, c := range b {
		s = mc.step(s, c)
		if mc.err != nil {
			return mc.err
		}
		if s == dead {
			return fmt.Errorf("%w: byte %d (%q) of %q", ErrRejected, i, c, b)
		}
	}
	m.state = s
	return nil
}

// Mask writes into dst (v.MaskWords() words) the tokens allowed next, one
// bit per token id: bit i%64 of dst[i/64]. End-of-generation tokens are set
// only where the grammar may end; after the end nothing is allowed.
func (m *Matcher) Mask(dst []uint64) error {
	if m.v == nil || len(dst) < m.v.MaskWords() {
		return fmt.Errorf("grammar: mask of %d words for a vocabulary needing %d", len(dst), m.v.MaskWords())
	}
	dst = dst[:m.v.MaskWords()]
	if m.ended {
		clear(dst)
		return nil
	}
	mc := m.g.m
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.mask(m.v, m.state, dst)
	return mc.err
}

// CanEnd reports whether the input so far is a complete sentence of the
// grammar (end-of-generation is allowed).
func (m *Matcher) CanEnd() bool {
	mc := m.g.m
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.states[m.state].accept
}

// Done reports whether nothing more can follow: the grammar has reached its
// end (an end-of-generation token was accepted, or no byte can extend the
// input). A runtime finishes the choice with "stop" then.
func (m *Matcher) Done() bool {
	if m.ended {
		return true
	}
	mc := m.g.m
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return !mc.states[m.state].live
}

// Allowed reports whether bit tok is set in a mask.
func Allowed(mask []uint64, tok int32) bool { return mask[tok>>6]&(1<<(tok&63)) != 0 }
