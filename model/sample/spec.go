package sample

import (
	"fmt"
	"math"
)

// Speculative decoding with a draft model: the draft draws its token x from
// its own distribution q (after the request's sampler transforms), and the
// target accepts x with probability min(1, p(x)/q(x)), else draws from the
// normalised residual max(0, p - q). Whatever q is, the token that comes out
// is distributed as p (Leviathan et al. 2023, Chen et al. 2023), provided x
// was drawn from q.

// Dist is a token distribution: the tokens of nonzero probability and their
// probabilities (summing to 1, up to rounding).
type Dist struct {
	IDs []int32
	P   []float32
}

// HasDist reports whether a sampler with p draws from a distribution that
// depends on the logits and history alone, so Dist and Verify apply: not
// greedy, not mirostat (its state carries over draws), not XTC (its coin
// changes the candidates from draw to draw).
func (p Params) HasDist() bool {
	return !p.greedy() && p.Mirostat == 0 && !p.xtc()
}

// Dist returns the distribution Sample draws from for logits and history:
// bias, penalties and DRY, then truncation, then temperature. Tokens whose
// probability is below minRatio times the largest are left out and the rest
// renormalised (0 keeps every candidate); a draft may do so, since it draws
// from the Dist it reports (DrawDist). dst's slices are reused. It fails as
// Sample does, and with ErrInvalidParams when !HasDist().
func (s *Sampler) Dist(logits []float32, history []int32, minRatio float64, dst Dist) (Dist, error) {
	dst.IDs, dst.P = dst.IDs[:0], dst.P[:0]
	if !s.p.HasDist() {
		return dst, fmt.Errorf("%w: greedy, mirostat and XTC sampling have no fixed distribution", ErrInvalidParams)
	}
	l, err := s.checked(logits, history)
	if err != nil {
		return dst, err
	}
	cand := s.candidates(l)
	mx := maxLogit(cand)
	invT := 1 / float64(s.p.Temperature)
	var total float64
	for i := range cand {
		cand[i].p = float32(expNeg(float64(cand[i].logit-mx) * invT))
	}
	cut := float32(minRatio) // the largest p is 1
	for _, c := range cand {
		if c.p > 0 && c.p >= cut {
			total += float64(c.p)
		}
	}
	for _, c := range cand {
		if c.p > 0 && c.p >= cut {
			dst.IDs = append(dst.IDs, c.id)
			dst.P = append(dst.P, float32(float64(c.p)/total))
		}
	}
	return dst, nil
}

// checked applies bias, penalties and DRY and checks the row as Sample does.
func (s *Sampler) checked(logits []float32, history []int32) ([]float32, error) {
	n := len(logits)
	if n == 0 {
		return nil, fmt.Errorf("%w: empty logits", ErrBadLogits)
	}
	if k := len(s.bias); k > 0 && int(s.bias[k-1].id) >= n {
		return nil, fmt.Errorf("%w: logit bias for token %d, vocabulary has %d",
			ErrInvalidParams, s.bias[k-1].id, n)
	}
	l := s.adjust(logits, history)
	best, bad := checkedArgmax(l)
	switch {
	case bad >= 0:
		return nil, fmt.Errorf("%w: logit of token %d is %v", ErrBadLogits, bad, l[bad])
	case math.IsInf(float64(l[best]), -1):
		return nil, ErrNoCandidates
	}
	return l, nil
}

// candidates is the truncation Sample applies before its draw.
func (s *Sampler) candidates(l []float32) []candidate {
	if s.p.chain() {
		return s.chainTruncate(l)
	}
	return s.truncate(l, l[Argmax(l)])
}

// DrawDist draws a token from d with the sampler's random stream (after
// Seek, a draw that depends on the seed and draw number alone).
func (s *Sampler) DrawDist(d Dist) int32 {
	var total float64
	for _, p := range d.P {
		total += float64(p)
	}
	u := s.uniform() * total
	var cum float64
	last := int32(-1)
	for i, p := range d.P {
		if p <= 0 {
			continue
		}
		cum += float64(p)
		if u < cum {
			return d.IDs[i]
		}
		last = d.IDs[i]
	}
	return last
}

// Verify samples the token after a draft token x that a draft drew from q:
// with u the first uniform of the sampler's stream (Seek it first), x is
// accepted when u·q(x) < p(x), p the distribution Sample draws from;
// otherwise the token is drawn from max(0, p - q), normalised, with the
// stream's next uniform. The token that comes out is distributed as p.
// When !HasDist(), or q gives x no probability (no draft drew it from q),
// Verify falls back to the rule for a one-hot q: the token is Sample's, x
// accepted when they are equal (also exact, for any draft). Logprobs are
// Sample's for the token returned.
func (s *Sampler) Verify(logits []float32, history []int32, x int32, q Dist) (Token, error) {
	qx := float32(0)
	for i, id := range q.IDs {
		if id == x {
			qx = q.P[i]
		}
	}
	if !s.p.HasDist() || qx <= 0 || len(q.IDs) != len(q.P) {
		return s.Sample(logits, history)
	}
	l, err := s.checked(logits, history)
	if err != nil {
		return Token{}, err
	}
	n := len(l)
	cand := s.candidates(l)
	mx := maxLogit(cand)
	invT := 1 / float64(s.p.Temperature)
	var total, px float64
	for i := range cand {
		cand[i].p = float32(expNeg(float64(cand[i].logit-mx) * invT))
		total += float64(cand[i].p)
		if cand[i].id == x {
			px = float64(cand[i].p)
		}
	}
	px /= total
	tok := Token{ID: x}
	if u := s.uniform(); float64(u*float64(qx)) >= px {
		tok.ID = s.residual(cand, total, q, n)
	}
	if s.p.logprobs() {
		s.fillLogprobs(&tok, l, l[Argmax(l)])
	}
	return tok, nil
}

// residual draws from max(0, p - q) normalised, p the candidates' weights
// over total; q's tokens outside the vocabulary of n are ignored. A residual
// of no mass (p = q up to rounding) draws from p.
func (s *Sampler) residual(cand []candidate, total float64, q Dist, n int) int32 {
	qp := s.qScratch(n)
	for i, id := range q.IDs {
		if id >= 0 && int(id) < n {
			qp[id] = float64(q.P[i])
		}
	}
	var mass float64
	for i := range cand {
		r := float64(cand[i].p)/total - qp[cand[i].id]
		cand[i].p = float32(max(r, 0))
		mass += float64(cand[i].p)
	}
	for _, id := range q.IDs {
		if id >= 0 && int(id) < n {
			qp[id] = 0 // the scratch stays zero between calls
		}
	}
	if mass <= 0 {
		return s.draw(cand, maxLogit(cand))
	}
	return pick(cand, s.uniform()*mass)
}

// qScratch is a zeroed (vocab) scratch for q, dense.
func (s *Sampler) qScratch(n int) []float64 {
	if len(s.qDense) < n {
		s.qDense = make([]float64, n)
	}
	return s.qDense[:n]
}
