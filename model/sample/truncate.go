package sample

import (
	"math"
	"slices"
)

// A candidate is a token still in the running. Rank order is logit
// descending, then id ascending; it is total, so every selection and sort
// here gives one answer whatever the algorithm.
type candidate struct {
	id    int32
	logit float32
	p     float32 // unnormalized probability, exp((logit - max) / T), set by top-p and draw
}

// before reports whether a ranks before b.
func before(a, b candidate) bool {
	return a.logit > b.logit || (a.logit == b.logit && a.id < b.id)
}

func byRank(a, b candidate) int {
	switch {
	case before(a, b):
		return -1
	case before(b, a):
		return 1
	}
	return 0
}

// truncate applies top-k, top-p and min-p, in that order, to the adjusted
// logits l, whose largest value is max, and returns the surviving tokens,
// without banned ones unless top-k had to take them. The most likely token
// always survives.
func (s *Sampler) truncate(l []float32, max float32) []candidate {
	p, n := s.p, len(l)
	var cand []candidate
	switch {
	case p.topK(n):
		cand = topK(s.scratch(p.TopK), l, p.TopK)
		if p.topP() {
			cand = topPSorted(cand, max, p.TopP)
		}
	case p.topP():
		cand = topP(s.scratch(n), l, max, p.TopP)
	case p.minP():
		// Min-p alone is a threshold on the logits: keep only what passes.
		cand = above(s.scratch(n), l, minPThreshold(max, p.MinP))
	default:
		cand = above(s.scratch(n), l, -math.MaxFloat32) // every token not banned
	}
	if p.minP() {
		cand = keepAbove(cand, minPThreshold(max, p.MinP))
	}
	return cand
}

// scratch returns s.cand with room for n candidates.
func (s *Sampler) scratch(n int) []candidate {
	if cap(s.cand) < n {
		s.cand = make([]candidate, n)
	}
	return s.cand[:n]
}

// minPThreshold is the smallest logit whose probability is at least minP
// times that of the most likely token, whose logit is max.
func minPThreshold(max, minP float32) float32 {
	return max + float32(math.Log(float64(minP)))
}

// above writes into dst the tokens of l whose logit is >= threshold, in id
// order, and returns them.
func above(dst []candidate, l []float32, threshold float32) []candidate {
	dst = dst[:0]
	for i, x := range l {
		if x >= threshold {
			dst = append(dst, candidate{id: int32(i), logit: x})
		}
	}
	return dst
}

// keepAbove drops, in place, the candidates whose logit is below threshold,
// keeping the order of the rest.
func keepAbove(cand []candidate, threshold float32) []candidate {
	kept := cand[:0]
	for _, c := range cand {
		if c.logit >= threshold {
			kept = append(kept, c)
		}
	}
	return kept
}

// topK writes the k highest-ranked tokens of l into dst (len(dst) >= k) and
// returns dst[:k], sorted by rank. It keeps a min-heap of the best k so far,
// whose root is the worst of them: about one comparison per token when k is
// small.
func topK(dst []candidate, l []float32, k int) []candidate {
	h := dst[:0]
	for i, x := range l[:k] {
		h = append(h, candidate{id: int32(i), logit: x})
	}
	for j := k/2 - 1; j >= 0; j-- {
		siftDown(h, j)
	}
	floor := h[0].logit
	for i, x := range l[k:] {
		// Ids only grow, so a tie with the root never ranks before it.
		if x > floor {
			h[0] = candidate{id: int32(k + i), logit: x}
			siftDown(h, 0)
			floor = h[0].logit
		}
	}
	slices.SortFunc(h, byRank)
	return h
}

// siftDown restores the heap below i, where every parent ranks after (is
// worse than) its children.
func siftDown(h []candidate, i int) {
	for {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && before(h[worst], h[l]) {
			worst = l
		}
		if r < len(h) && before(h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// draw applies the temperature to cand, whose largest logit is max, takes
// the softmax, and draws one token from it.
func (s *Sampler) draw(cand []candidate, max float32) int32 {
	invT := 1 / float64(s.p.Temperature)
	var total float64
	for i := range cand {
		cand[i].p = float32(expNeg(float64(cand[i].logit-max) * invT))
		total += float64(cand[i].p)
	}
	return pick(cand, s.uniform()*total)
}

// pick is the first candidate at which the running sum of cand's weights
// (p) passes u, u below their total; the last with any weight where
// rounding left u just past the end.
func pick(cand []candidate, u float64) int32 {
	var cum float64
	last := cand[0].id
	for _, c := range cand {
		if c.p == 0 {
			continue
		}
		cum += float64(c.p)
		if u < cum {
			return c.id
		}
		last = c.id
	}
	return last
}
