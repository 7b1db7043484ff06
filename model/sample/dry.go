package sample

import (
	"math"
	"slices"
	"strings"
)

// DRY limits, as llama.cpp's llama_sampler_init_dry: a breaker string is
// cut to dryMaxBreakerBytes, and the tail of its token sequence to
// dryMaxBreakerTail tokens, which keeps the breaker scan linear.
const (
	dryMaxBreakerBytes = 40
	dryMaxBreakerTail  = 20
)

// DryBreakerSequences turns DRY's sequence-breaker strings into the token
// sequences Params.DryBreakers holds, as llama.cpp's
// get_overlapping_token_sequences does: for each breaker, every token whose
// text contains it is a single-token breaker, and every token whose text
// ends with a prefix of it is a head followed by the tokenization (encode)
// of the rest of the breaker, cut to 20 tokens. piece(id) is token id's
// text, for the n tokens of the vocabulary. Empty breakers are skipped;
// breakers are cut to 40 bytes. The result lists heads in id order.
func DryBreakerSequences(breakers []string, n int, piece func(int32) string, encode func(string) []int32) [][]int32 {
	var seqs [][]int32
	for _, b := range breakers {
		if b == "" {
			continue
		}
		if len(b) > dryMaxBreakerBytes {
			b = b[:dryMaxBreakerBytes]
		}
		for id := int32(0); int(id) < n; id++ {
			word := piece(id)
			if strings.Contains(word, b) {
				seqs = appendBreaker(seqs, []int32{id})
				continue
			}
			for pos := strings.IndexByte(word, b[0]); pos >= 0; {
				if i := len(word) - pos; i < len(b) && word[pos:] == b[:i] {
					tail := encode(b[i:])
					if len(tail) > dryMaxBreakerTail {
						tail = tail[:dryMaxBreakerTail]
					}
					seqs = appendBreaker(seqs, append([]int32{id}, tail...))
				}
				next := strings.IndexByte(word[pos+1:], b[0])
				if next < 0 {
					break
				}
				pos += 1 + next
			}
		}
	}
	return seqs
}

// appendBreaker appends seq unless seqs already holds it.
func appendBreaker(seqs [][]int32, seq []int32) [][]int32 {
	for _, s := range seqs {
		if slices.Equal(s, seq) {
			return seqs
		}
	}
	return append(seqs, seq)
}

// dryPenalize applies DRY to the adjusted logits l, given the history, as
// llama.cpp's llama_sampler_dry_apply: it finds, for each token, the longest
// run of tokens ending the window that the token would extend (a repeat of
// an earlier run followed by that token), limited by the latest sequence
// breaker, and subtracts multiplier * base^(run - allowed) from the logits
// of tokens extending a run of at least allowed tokens.
func (s *Sampler) dryPenalize(l []float32, history []int32) {
	p := s.p
	window := history
	if p.DryPenaltyLastN > 0 && len(window) > p.DryPenaltyLastN {
		window = window[len(window)-p.DryPenaltyLastN:]
	}
	n := len(window)
	if n <= p.DryAllowedLength {
		return
	}
	rat := func(i int) int32 { return window[n-1-i] } // i tokens back from the newest
	repLimit := s.dryRepLimit(window)
	if repLimit < p.DryAllowedLength {
		return
	}
	counts := s.dryRepeatCounts(window, repLimit)
	// Step 3: the longest run each token would extend.
	longest := s.dryMax
	clear(longest)
	for i := 0; i < n-1; i++ {
		run := int(counts[i])
		if run < p.DryAllowedLength {
			continue
		}
		tok := rat(n - 2 - i)
		if cur, ok := longest[tok]; !ok || int(cur) < run {
			longest[tok] = int32(run)
		}
	}
	// Step 4: penalize, with the exponent clamped so the power stays finite.
	maxExp := 0
	if p.DryBase > 1.000001 {
		maxExp = int(float32(88.7228391) / float32(math.Log(float64(p.DryBase))))
	}
	for tok, run := range longest {
		if int(tok) >= len(l) || tok < 0 || s.drySingleBreaker(tok) {
			continue
		}
		exp := int(run) - p.DryAllowedLength
		if maxExp > 0 && exp > maxExp {
			exp = maxExp
		}
		penalty := float32(float64(p.DryMultiplier) * math.Pow(float64(p.DryBase), float64(exp)))
		l[tok] -= penalty
	}
}

// dryRepLimit is llama.cpp's step 1: the run length allowed by the newest
// sequence breaker in the window (the window's length if there is none).
func (s *Sampler) dryRepLimit(window []int32) int {
	n := len(window)
	for i := 0; i < n; i++ {
		tails, ok := s.dryTails[window[n-1-i]]
		if !ok {
			continue
		}
		longest := -1
		for _, tail := range tails {
			if len(tail) <= longest || len(tail) > i {
				continue
			}
			match := true
			for off, t := range tail {
				if t != window[n-1-(i-off-1)] {
					match = false
					break
				}
			}
			if match {
				longest = len(tail)
			}
		}
		if longest >= 0 {
			return i - longest
		}
	}
	return n
}

// dryRepeatCounts is llama.cpp's step 2, a Z-algorithm run backwards over
// the window: counts[last-k] is how many tokens ending k tokens back match
// the tokens ending the window, capped at limit.
func (s *Sampler) dryRepeatCounts(window []int32, limit int) []int32 {
	n := len(window)
	if cap(s.dryCounts) < n {
		s.dryCounts = make([]int32, n)
	}
	counts := s.dryCounts[:n]
	clear(counts)
	rat := func(i int) int32 { return window[n-1-i] }
	last, lt, rt := n-1, 0, 0
	for k := 1; k < n; k++ {
		if k > rt {
			m := 0
			for m+k < n && rat(m) == rat(m+k) {
				m++
			}
			counts[last-k] = int32(min(m, limit))
			if m > 0 {
				lt, rt = k, k+m-1
			}
			continue
		}
		pair, right := k-lt, rt-k+1
		if int(counts[last-pair]) < right {
			counts[last-k] = int32(min(int(counts[last-pair]), limit))
			continue
		}
		i := rt + 1
		for i < n && rat(i) == rat(i-k) {
			i++
		}
		counts[last-k] = int32(min(i-k, limit))
		lt, rt = k, i-1
	}
	return counts
}

// drySingleBreaker reports whether tok is a breaker by itself.
func (s *Sampler) drySingleBreaker(tok int32) bool {
	for _, tail := range s.dryTails[tok] {
		if len(tail) == 0 {
			return true
		}
	}
	return false
}

// dryIndex maps each breaker's head token to its tails, as llama.cpp's
// multimap of processed breakers.
func dryIndex(breakers [][]int32) map[int32][][]int32 {
	m := make(map[int32][][]int32)
	for _, b := range breakers {
		if len(b) > 0 {
			m[b[0]] = append(m[b[0]], b[1:])
		}
	}
	return m
}
