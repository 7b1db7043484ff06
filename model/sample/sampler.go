package sample

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Token is one sampled token.
type Token struct {
	ID int32
	// Logprob is the chosen token's log-probability, set when
	// Params.WantLogprob or Params.Logprobs > 0; otherwise 0.
	Logprob float32
	// Top holds the Params.Logprobs most likely tokens (all of them if the
	// vocabulary is smaller), by log-probability descending, lowest id on
	// ties; banned tokens have -Inf, which JSON cannot carry. It aliases the
	// Sampler's scratch and is valid until the next call to Sample: copy it
	// to keep it.
	Top []TokenLogprob
}

// TokenLogprob is one token's log-probability.
type TokenLogprob struct {
	ID      int32
	Logprob float32
}

// Sampler samples the tokens of one sequence. Make one with New.
type Sampler struct {
	p    Params
	bias []tokenBias // Params.LogitBias sorted by id
	rng  rand.PCG

	logits []float32      // (vocab) logits after bias and penalties
	counts []int32        // (vocab) occurrences in the penalty window; all zero between calls
	cand   []candidate    // (vocab, or TopK) tokens that survive truncation
	lpCand []candidate    // (Logprobs) most likely tokens, for Token.Top
	top    []TokenLogprob // (Logprobs) what Token.Top returns
	qDense []float64      // (vocab) a draft's q, for Verify's residual (spec.go); all zero between calls

	dryCounts []int32             // (DRY window) repeat counts
	dryMax    map[int32]int32     // token -> longest run it would extend
	dryTails  map[int32][][]int32 // breaker head token -> the tokens that follow it
	xtc       xtcCoin             // XTC's own random stream, as llama.cpp's
	miro      mirostatState       // mirostat's mu and draw stream (mirostat.go)
}

type tokenBias struct {
	id   int32
	bias float32
}

// pcgStream is the second half of the PCG state; Params.Seed is the first.
const pcgStream = 0x9e3779b97f4a7c15

// New returns a Sampler for p, or p's Validate error.
func New(p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s := &Sampler{p: p}
	for id, b := range p.LogitBias {
		s.bias = append(s.bias, tokenBias{id, b})
	}
	slices.SortFunc(s.bias, func(a, b tokenBias) int { return cmp.Compare(a.id, b.id) })
	s.p.LogitBias = nil // s.bias is the copy; the caller keeps the map
	if p.Mirostat != 0 {
		s.p = mirostatOnly(s.p)
	}
	seed := p.Seed
	if !p.HasSeed {
		seed = rand.Uint64()
	}
	s.rng.Seed(seed, pcgStream)
	s.xtc.seed = uint32(seed)
	if s.p.dry() {
		s.dryMax = make(map[int32]int32)
		s.dryTails = dryIndex(p.DryBreakers)
	}
	return s, nil
}

// Sample picks the next token from logits, one row of the model's output
// (its length is the vocabulary size), given the sequence's history (prompt
// and generated tokens, oldest first) for the penalties. History tokens
// outside the vocabulary are ignored. Neither slice is modified or kept.
//
// Log-probabilities are those of the logits after bias and penalties, before
// top-k, top-p, min-p and temperature: log_softmax of what the model, as
// steered by the request, predicts, whichever way the token was then picked.
//
// Sample returns ErrBadLogits for an empty row or a NaN or +Inf logit,
// ErrNoCandidates when every logit is -Inf after bias and penalties, and
// ErrInvalidParams when a logit bias names a token outside the vocabulary.
func (s *Sampler) Sample(logits []float32, history []int32) (Token, error) {
	n := len(logits)
	if n == 0 {
		return Token{}, fmt.Errorf("%w: empty logits", ErrBadLogits)
	}
	if k := len(s.bias); k > 0 && int(s.bias[k-1].id) >= n {
		return Token{}, fmt.Errorf("%w: logit bias for token %d, vocabulary has %d",
			ErrInvalidParams, s.bias[k-1].id, n)
	}
	l := s.adjust(logits, history)
	best, bad := checkedArgmax(l)
	switch {
	case bad >= 0:
		return Token{}, fmt.Errorf("%w: logit of token %d is %v", ErrBadLogits, bad, l[bad])
	case math.IsInf(float64(l[best]), -1):
		return Token{}, ErrNoCandidates
	}
	tok := Token{ID: int32(best)}
	if !s.p.greedy() {
		switch {
		case s.p.Mirostat != 0:
			tok.ID = s.mirostat(l)
		case s.p.chain():
			cand := s.chainTruncate(l)
			tok.ID = s.draw(cand, maxLogit(cand))
		default:
			tok.ID = s.draw(s.truncate(l, l[best]), l[best])
		}
	}
	if s.p.logprobs() {
		s.fillLogprobs(&tok, l, l[best])
	}
	return tok, nil
}

// adjust applies logit bias, then the penalties, then DRY, and returns the adjusted
// logits: logits itself when there is nothing to apply, else s.logits.
func (s *Sampler) adjust(logits []float32, history []int32) []float32 {
	if len(s.bias) == 0 && !s.p.penalties() && !s.p.dry() {
		return logits
	}
	n := len(logits)
	if cap(s.logits) < n {
		s.logits = make([]float32, n)
	}
	l := s.logits[:n]
	copy(l, logits)
	for _, b := range s.bias {
		l[b.id] += b.bias
	}
	if s.p.penalties() {
		s.penalize(l, history)
	}
	if s.p.dry() {
		s.dryPenalize(l, history)
	}
	return l
}

// penalize applies the repetition, presence and frequency penalties to the
// tokens of the penalty window, as llama.cpp does:
//
//	l = l > 0 ? l/repetition : l*repetition
//	l -= count*frequency + presence
func (s *Sampler) penalize(l []float32, history []int32) {
	n := len(l)
	if cap(s.counts) < n {
		s.counts = make([]int32, n) // zero, as the invariant requires
	}
	counts := s.counts[:n]
	window := history
	if last := s.p.PenaltyLastN; last > 0 && len(window) > last {
		window = window[len(window)-last:]
	}
	for _, t := range window {
		if t >= 0 && int(t) < n {
			counts[t]++
		}
	}
	rep, pres, freq := s.p.RepetitionPenalty, s.p.PresencePenalty, s.p.FrequencyPenalty
	for _, t := range window {
		if t < 0 || int(t) >= n || counts[t] == 0 {
			continue // outside the vocabulary, or already penalized
		}
		x := l[t]
		if s.p.repetition() {
			if x > 0 {
				x /= rep
			} else {
				x *= rep
			}
		}
		// The conversions keep the compiler from fusing a multiply-add,
		// so results are the same on every architecture.
		x -= float32(float32(counts[t])*freq) + pres
		l[t] = x
		counts[t] = 0
	}
}

// fillLogprobs sets tok.Logprob and tok.Top from the adjusted logits l, whose
// largest value is max.
func (s *Sampler) fillLogprobs(tok *Token, l []float32, max float32) {
	lse := logSumExp(l, max)
	tok.Logprob = float32(float64(l[tok.ID]) - lse)
	k := min(s.p.Logprobs, len(l))
	if k == 0 {
		return
	}
	if cap(s.lpCand) < k {
		s.lpCand = make([]candidate, k)
		s.top = make([]TokenLogprob, k)
	}
	top := s.top[:k]
	for i, c := range topK(s.lpCand[:k], l, k) {
		top[i] = TokenLogprob{ID: c.id, Logprob: float32(float64(c.logit) - lse)}
	}
	tok.Top = top
}

// maxLogit is the largest logit of cand (not empty).
func maxLogit(cand []candidate) float32 {
	mx := cand[0].logit
	for _, c := range cand[1:] {
		mx = max(mx, c.logit)
	}
	return mx
}

// uniform returns a random float64 in [0, 1).
func (s *Sampler) uniform() float64 {
	return float64(s.rng.Uint64()>>11) * 0x1p-53
}

// Reseed restarts the random stream from seed, so that a draw can depend on
// (seed, draw number) alone: the runtime reseeds with DrawSeed before each
// token, so a sequence recomputed after preemption, or moved to another
// device, draws the same tokens.
func (s *Sampler) Reseed(seed uint64) { s.rng.Seed(seed, pcgStream) }

// Seek prepares draw number draw (0 for a sequence's first token) of a
// sequence seeded with seed: it reseeds the draw's random stream with
// DrawSeed(seed, draw), and moves XTC's stream to its draw'th coin, so that
// both depend on (seed, draw) alone, whatever Sample calls came before.
// Mirostat's state (mu, and its stream) depends on every draw before, so it
// carries over from draw-1 to draw only; for any other draw it starts over.
func (s *Sampler) Seek(seed, draw uint64) {
	s.Reseed(DrawSeed(seed, draw))
	s.xtc.seek(uint32(seed), draw)
	if s.p.Mirostat != 0 {
		s.miro.seek(uint32(seed), draw, s.p.MirostatTau)
	}
}

// DrawSeed mixes a sequence's seed with the number of its draw (splitmix64).
func DrawSeed(seed, draw uint64) uint64 {
	z := seed + (draw+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
