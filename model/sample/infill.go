package sample

import (
	"bytes"
	"math"
	"slices"
	"sort"
)

// The infill sampler is llama.cpp's (llama_sampler_init_infill), meant for
// fill-in-the-middle completion after top-k and top-p: when end-of-
// generation tokens hold enough of the probability it keeps only them (the
// infill ends); otherwise it merges each token into any candidate whose
// text it begins (the more likely of the two takes both probabilities),
// keeps the tokens of probability 0.2 or more, and then those of at least
// 1/(kept + 1), end-of-generation tokens always; when no text token is
// left, the end-of-text token alone. It decides which candidates survive,
// in float32 as llama.cpp; the draw among them is this package's.

// InfillVocab is what the infill sampler knows of a vocabulary: each
// token's text (llama.cpp's token_to_piece without special tokens' text),
// its end-of-generation tokens and its end-of-text token. Make one per
// vocabulary with NewInfillVocab; it is read-only and safe for concurrent
// use.
type InfillVocab struct {
	text []byte  // every token's text, one after another
	off  []int32 // (vocab+1) token i's text is text[off[i]:off[i+1]]
	eog  []bool  // (vocab)
	eot  int32   // the token the sampler falls back to
}

// NewInfillVocab returns the InfillVocab of a vocabulary of n tokens: piece
// gives a token's text as llama.cpp's token_to_piece with special false
// (nothing for control tokens), isEOG its end-of-generation tokens, and eot
// the token kept when no text token survives (llama.cpp's EOT token, else
// EOS).
func NewInfillVocab(n int, piece func(id int32) []byte, isEOG func(id int32) bool, eot int32) *InfillVocab {
	v := &InfillVocab{off: make([]int32, n+1), eog: make([]bool, n), eot: eot}
	for id := range int32(n) {
		v.text = append(v.text, piece(id)...)
		v.off[id+1] = int32(len(v.text))
		v.eog[id] = isEOG(id)
	}
	return v
}

func (v *InfillVocab) piece(id int32) []byte { return v.text[v.off[id]:v.off[id+1]] }

func (v *InfillVocab) isEOG(id int32) bool { return id >= 0 && int(id) < len(v.eog) && v.eog[id] }

// infill applies the infill sampler to cand (sorted by rank when sorted)
// and returns the survivors, in rank order.
func infill(cand []candidate, sorted bool, v *InfillVocab) []candidate {
	if !sorted {
		slices.SortFunc(cand, byRank)
	}
	softmax(cand)
	var pTxt, pEOG float32
	for _, c := range cand {
		if v.isEOG(c.id) {
			pEOG += c.p
		} else {
			pTxt += c.p
		}
	}
	if 3*pEOG*float32(len(cand)) > pTxt { // the text is not worth it: end here
		kept := cand[:0]
		for _, c := range cand {
			if v.isEOG(c.id) {
				kept = append(kept, c)
			}
		}
		return kept
	}
	infillMerge(cand, v)
	cand, nText := infillKeep(cand, v, 0.2)
	if nText == 0 {
		if v.eot < 0 { // no end-of-text token to fall back to: the most likely
			return cand[:1]
		}
		return append(cand[:0], candidate{id: v.eot, logit: 1, p: 1})
	}
	cand, _ = infillKeep(cand, v, float32(1.0/float64(nText+1)))
	return cand
}

// infillKeep keeps the end-of-generation tokens and the others of
// probability at least threshold, renormalized, and counts the others.
func infillKeep(cand []candidate, v *InfillVocab, threshold float32) ([]candidate, int) {
	kept := cand[:0]
	nText := 0
	var sum float32
	for _, c := range cand {
		eog := v.isEOG(c.id)
		if c.p < threshold && !eog {
			continue
		}
		if !eog {
			nText++
		}
		sum += c.p
		kept = append(kept, c)
	}
	for i := range kept {
		kept[i].p /= sum
	}
	return kept, nText
}

// infillMerge is llama.cpp's "combine tokens with common prefix": for each
// candidate i0 in order, and each candidate i1 in order whose text begins
// with i0's (non-empty) text, the less likely of the two is merged into the
// other: its probability added, its logit set to -Inf. Only those pairs
// count, so it visits them through the candidates sorted by text rather
// than all n^2 pairs, in llama.cpp's order.
func infillMerge(cand []candidate, v *InfillVocab) {
	byText := make([]int, len(cand)) // candidate indices, by text
	for i := range byText {
		byText[i] = i
	}
	sort.SliceStable(byText, func(a, b int) bool {
		return bytes.Compare(v.piece(cand[byText[a]].id), v.piece(cand[byText[b]].id)) < 0
	})
	neg := float32(math.Inf(-1))
	var ext []int
	for i0 := range cand {
		p0 := v.piece(cand[i0].id)
		if len(p0) == 0 || cand[i0].logit == neg {
			continue
		}
		// The candidates whose text begins with p0 follow p0's lower bound.
		lo := sort.Search(len(byText), func(k int) bool { return bytes.Compare(v.piece(cand[byText[k]].id), p0) >= 0 })
		ext = ext[:0]
		for k := lo; k < len(byText) && bytes.HasPrefix(v.piece(cand[byText[k]].id), p0); k++ {
			if byText[k] != i0 {
				ext = append(ext, byText[k])
			}
		}
		slices.Sort(ext)
		for _, i1 := range ext {
			if cand[i0].logit == neg {
				break
			}
			if cand[i1].logit == neg {
				continue
			}
			dst, src := i0, i1
			if cand[i1].p > cand[i0].p {
				dst, src = i1, i0
			}
			cand[dst].p += cand[src].p
			cand[src].logit, cand[src].p = neg, 0
		}
	}
}
