package grammar

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
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
	gen   uint64 // the automaton generation state belongs to
	hist  []byte // the bytes accepted, replayed after the automaton is reset
	ended bool   // an end-of-generation token was accepted
}

// NewMatcher starts a matcher at the beginning of the grammar. v may be nil
// for a matcher fed only with AcceptBytes.
func (g *Grammar) NewMatcher(v *Vocab) (*Matcher, error) {
	m := &Matcher{g: g, v: v, state: unknown}
	mc := g.m
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if err := m.retry(func() error { return nil }); err != nil {
		return nil, err
	}
	if m.state == dead {
		return nil, fmt.Errorf("grammar: the root rule matches nothing")
	}
	return m, nil
}

// sync brings m.state into the automaton's current generation, replaying
// the input when the automaton was reset. The caller holds the lock.
func (m *Matcher) sync() {
	mc := m.g.m
	if m.gen == mc.gen && m.state != unknown {
		return
	}
	s, _ := mc.startState()
	for _, c := range m.hist {
		if s == dead {
			break
		}
		s = mc.step(s, c)
	}
	m.state, m.gen = s, mc.gen
}

// retry runs op in the matcher's current state; when the shared automaton
// reaches a limit it is reset and op runs once more. The caller holds the
// lock.
func (m *Matcher) retry(op func() error) error {
	mc := m.g.m
	defer mc.measure()
	for attempt := 0; ; attempt++ {
		mc.work = 0
		if m.gen != mc.gen {
			m.state = unknown
		}
		m.sync()
		err := op()
		if mc.err == nil {
			return err
		}
		err = mc.err
		mc.reset()
		if attempt == 1 {
			return err
		}
	}
}

// Clone returns an independent copy of m.
func (m *Matcher) Clone() *Matcher {
	c := *m
	c.hist = slices.Clip(c.hist)
	return &c
}

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
	return m.retry(func() error {
		s := m.state
		for i, c := range b {
			if s = mc.step(s, c); s == dead {
				return fmt.Errorf("%w: byte %d (%q) of %q", ErrRejected, i, c, b)
			}
		}
		if mc.err == nil {
			m.state = s
			m.hist = append(m.hist, b...)
		}
		return nil
	})
}

// Mask writes into dst (v.MaskWords() words) the tokens allowed next, one
// bit per token id: bit i%64 of dst[i/64]. End-of-generation tokens are set
// only where the grammar may end; after the end nothing is allowed.
func (m *Matcher) Mask(dst []uint64) error {
	_, err := m.FillMask(dst)
	return err
}

// FillMask is Mask, and reports whether the mask came from the grammar's
// cache (the state was seen before, by this matcher or another one over
// the same vocabulary) rather than from a walk of the token trie.
func (m *Matcher) FillMask(dst []uint64) (cached bool, err error) {
	if m.v == nil {
		return false, fmt.Errorf("grammar: a mask needs a matcher over a vocabulary")
	}
	if len(dst) < m.v.MaskWords() {
		return false, fmt.Errorf("grammar: mask of %d words for a vocabulary needing %d", len(dst), m.v.MaskWords())
	}
	dst = dst[:m.v.MaskWords()]
	if m.ended {
		clear(dst)
		return true, nil
	}
	mc := m.g.m
	mc.mu.Lock()
	defer mc.mu.Unlock()
	err = m.retry(func() error {
		cached = mc.mask(m.v, m.state, dst)
		return nil
	})
	return cached, err
}

// CanEnd reports whether the input so far is a complete sentence of the
// grammar (end-of-generation is allowed).
func (m *Matcher) CanEnd() bool {
	mc := m.g.m
	mc.mu.Lock()
	defer mc.mu.Unlock()
	m.retry(func() error { return nil })
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
	m.retry(func() error { return nil })
	return !mc.states[m.state].live
}

// Allowed reports whether bit tok is set in a mask.
func Allowed(mask []uint64, tok int32) bool { return mask[tok>>6]&(1<<(tok&63)) != 0 }

// MaskLogits sets to -Inf the logits of the tokens the mask does not allow
// (logits has one entry per token of the vocabulary the mask was made for).
func MaskLogits(logits []float32, mask []uint64) {
	negInf := float32(math.Inf(-1))
	var kept [64]float32
	for w, allowed := range mask {
		base := w * 64
		if base >= len(logits) {
			return
		}
		row := logits[base:min(base+64, len(logits))]
		switch {
		case allowed == ^uint64(0):
		case bits.OnesCount64(allowed) < 32: // few allowed: keep them, fill the row
			n := 0
			for a := allowed; a != 0; a &= a - 1 {
				if i := bits.TrailingZeros64(a); i < len(row) {
					kept[n] = row[i]
					n++
				}
			}
			for i := range row {
				row[i] = negInf
			}
			n = 0
			for a := allowed; a != 0; a &= a - 1 {
				if i := bits.TrailingZeros64(a); i < len(row) {
					row[i] = kept[n]
					n++
				}
			}
		default:
			for banned := ^allowed; banned != 0; banned &= banned - 1 {
				if i := bits.TrailingZeros64(banned); i < len(row) {
					row[i] = negInf
				}
			}
		}
	}
}
