package sample

import (
	"math"
	"slices"
)

// The general chain runs when typical-p, XTC, min_keep or infill is set:
// llama.cpp's default order (top-k → typical-p → top-p → min-p → XTC), then
// infill (where llama.vim's samplers list puts it), each step as
// llama.cpp's sampler, in float32, each renormalizing over the candidates
// left by the ones before. Unlike the fast paths it sorts every candidate
// (a few milliseconds on a 150k vocabulary without top-k).

// chainTruncate applies the general chain to the adjusted logits l and
// returns the surviving candidates. Typical-p and XTC may drop the most
// likely token, as they are meant to.
func (s *Sampler) chainTruncate(l []float32) []candidate {
	p, n := s.p, len(l)
	var cand []candidate
	sorted := false
	if p.topK(n) {
		cand, sorted = topK(s.scratch(p.TopK), l, p.TopK), true
	} else {
		cand = above(s.scratch(n), l, -math.MaxFloat32)
	}
	keep := max(p.MinKeep, 1)
	if p.typical() {
		cand = s.typicalP(cand, sorted, keep)
		sorted = false
	}
	if p.topP() {
		cand, sorted = chainTopP(cand, sorted, p.TopP, keep), true
	}
	if p.minP() {
		cand = chainMinP(cand, sorted, p.MinP, keep)
	}
	if p.xtc() && len(cand) >= 2 && s.xtc.coin() <= p.XTCProbability {
		cand = xtcDrop(cand, sorted, p.XTCThreshold, keep)
	}
	if p.Infill != nil {
		cand = infill(cand, false, p.Infill)
	}
	return cand
}

// softmax sets each candidate's p to its probability among cand, in float32
// as llama.cpp's llama_sampler_softmax_impl.
func softmax(cand []candidate) {
	mx := maxLogit(cand)
	var sum float32
	for i := range cand {
		cand[i].p = float32(math.Exp(float64(cand[i].logit - mx)))
		sum += cand[i].p
	}
	for i := range cand {
		cand[i].p /= sum
	}
}

// typicalP is llama.cpp's locally typical sampling: it orders the
// candidates by how far their surprise, -log p, is from the entropy, and
// keeps them in that order until their mass exceeds TypicalP and at least
// keep are kept. The result is in that order, not by rank.
func (s *Sampler) typicalP(cand []candidate, sorted bool, keep int) []candidate {
	if !sorted {
		slices.SortFunc(cand, byRank)
	}
	softmax(cand)
	var entropy float32
	for _, c := range cand {
		if c.p > 0 {
			entropy += float32(-c.p * float32(math.Log(float64(c.p)))) // explicit conversion: no fused multiply-add, as amd64 computes it
		}
	}
	type scored struct {
		c     candidate
		score float32
	}
	sc := make([]scored, len(cand))
	for i, c := range cand {
		sc[i] = scored{c, float32(math.Abs(float64(-float32(math.Log(float64(c.p))) - entropy)))}
	}
	// Stable, so ties keep rank order (std::sort leaves them unspecified).
	slices.SortStableFunc(sc, func(a, b scored) int {
		switch {
		case a.score < b.score:
			return -1
		case a.score > b.score:
			return 1
		}
		return 0
	})
	var cum float32
	last := len(sc)
	for i, x := range sc {
		cum += x.c.p
		if cum > s.p.TypicalP && i >= keep-1 {
			last = i + 1
			break
		}
	}
	for i := range last {
		cand[i] = sc[i].c
	}
	return cand[:last]
}

// chainTopP is llama.cpp's top-p with min_keep: the shortest run of the
// candidates, in rank order, whose probability among them adds up to at
// least topP, and at least keep of them. The result is sorted by rank.
func chainTopP(cand []candidate, sorted bool, topP float32, keep int) []candidate {
	softmax(cand)
	if !sorted {
		slices.SortFunc(cand, byRank)
	}
	var cum float32
	for i, c := range cand {
		cum += c.p
		if cum >= topP && i+1 >= keep {
			return cand[:i+1]
		}
	}
	return cand
}

// chainMinP is llama.cpp's min-p with min_keep: the candidates whose
// probability is at least minP times the largest, unless fewer than keep
// pass; then the keep best, and any after them that pass.
func chainMinP(cand []candidate, sorted bool, minP float32, keep int) []candidate {
	if !sorted {
		mx := float32(-math.MaxFloat32)
		for _, c := range cand {
			mx = max(mx, c.logit)
		}
		threshold := mx + float32(math.Log(float64(minP)))
		n := 0
		for _, c := range cand {
			if c.logit >= threshold {
				n++
			}
		}
		if n > 0 && n >= keep {
			return keepAbove(cand, threshold)
		}
		slices.SortFunc(cand, byRank)
	}
	threshold := cand[0].logit + float32(math.Log(float64(minP)))
	i := 1
	for ; i < len(cand); i++ {
		if cand[i].logit < threshold && i >= keep {
			break
		}
	}
	return cand[:i]
}

// xtcDrop is llama.cpp's XTC once its coin came up: of the candidates in
// rank order whose probability is at least threshold, all but the last
// (least likely) are dropped, when more than one passes and at least keep
// remain.
func xtcDrop(cand []candidate, sorted bool, threshold float32, keep int) []candidate {
	if !sorted {
		slices.SortFunc(cand, byRank)
	}
	softmax(cand)
	last := 0
	for i, c := range cand {
		if c.p < threshold {
			break
		}
		last = i
	}
	if len(cand)-last >= keep && last > 0 {
		return cand[last:]
	}
	return cand
}
