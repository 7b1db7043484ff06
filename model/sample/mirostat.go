package sample

import (
	"math"
	"slices"
)

// Mirostat (Basu et al., 2020) picks tokens so that their surprise,
// -log2 p, stays near a target tau: it keeps a running threshold mu,
// truncates the distribution with it, draws, and moves mu by eta times the
// draw's surprise error. Both versions follow llama.cpp b10573
// (llama_sampler_init_mirostat with m = 100, _mirostat_v2) step by step in
// float32, and draw as its llama_sample_dist: libstdc++'s
// std::discrete_distribution over a std::mt19937 seeded with the request's
// seed (as a uint32). The same seed, logits and temperature therefore give
// llama.cpp's tokens and mu.
//
// As in llama-server, mirostat replaces the sampler chain: logit bias, then
// temperature, then mirostat (New turns the penalties, DRY, top-k,
// typical-p, top-p, min-p and XTC off).

// mirostatM is llama.cpp's m for mirostat v1: the most probable tokens it
// estimates the distribution's Zipf exponent from.
const mirostatM = 100

// mirostatState is one sequence's mirostat state: mu and the draw stream.
type mirostatState struct {
	rng    mt19937
	seed   uint32
	mu     float32
	next   uint64 // the draw number the state is for
	seeded bool
}

// reset starts the state over for seed: mu = 2 tau, the stream at its start.
func (m *mirostatState) reset(seed uint32, tau float32) {
	m.rng.seed(seed)
	m.seed, m.mu, m.next, m.seeded = seed, 2*tau, 0, true
}

// seek prepares draw number draw of the sequence seeded with seed. Mu
// depends on every draw before, so the state carries over from draw-1 only;
// any other draw (the sampler was made anew mid-sequence, after a device
// restart) starts over from llama.cpp's initial state.
func (m *mirostatState) seek(seed uint32, draw uint64, tau float32) {
	if !m.seeded || seed != m.seed || draw != m.next {
		m.reset(seed, tau)
		m.next = draw
	}
}

// mirostat draws a token from the adjusted logits l with mirostat version
// s.p.Mirostat and updates mu.
func (s *Sampler) mirostat(l []float32) int32 {
	p := s.p
	m := &s.miro
	if !m.seeded {
		m.reset(s.xtc.seed, p.MirostatTau)
	}
	// llama.cpp keeps every token, banned ones too: they sort last with p 0.
	cand := s.scratch(len(l))
	for i, x := range l {
		cand[i] = candidate{id: int32(i), logit: x / p.Temperature}
	}
	slices.SortFunc(cand, byRank)
	softmax(cand) // float32, summed in rank order as llama_sampler_softmax_impl
	if p.Mirostat == 1 {
		cand = cand[:mirostatK(cand, m.mu, len(l))]
	} else {
		n := 0
		for n < len(cand) && !(-log2f(cand[n].p) > m.mu) {
			n++
		}
		cand = cand[:max(n, 1)]
	}
	softmax(cand)
	idx := discreteDist(cand, &m.rng)
	e := -log2f(cand[idx].p) - p.MirostatTau
	m.mu -= float32(p.MirostatEta * e) // explicit conversion: no fused multiply-add
	m.next++
	return cand[idx].id
}

// mirostatK is mirostat v1's top-k: it estimates the Zipf exponent s from
// the m most probable of cand (sorted, with probabilities), and the k whose
// expected surprise is mu in a vocabulary of n tokens.
func mirostatK(cand []candidate, mu float32, n int) int {
	var sumTiBi, sumTiSq float32
	for i := 0; i < mirostatM-1 && i < len(cand)-1; i++ {
		ti := logf(float32(i+2) / float32(i+1))
		bi := logf(cand[i].p / cand[i+1].p)
		sumTiBi += float32(ti * bi) // explicit conversions: no fused multiply-add
		sumTiSq += float32(ti * ti)
	}
	sHat := sumTiBi / sumTiSq
	epsHat := sHat - 1
	k := powf(float32(epsHat*powf(2, mu))/(1-powf(float32(n), -epsHat)), 1/sHat)
	return min(max(cvttss2si(k), 1), len(cand))
}

// cvttss2si converts k to an int32 as C++'s int(k) does on x86-64: toward
// zero, and INT_MIN for NaN or a value out of range (llama.cpp then keeps
// one token, as max(int(k), 1) does there).
func cvttss2si(k float32) int {
	if k != k || k >= 1<<31 || k < -(1<<31) {
		return math.MinInt32
	}
	return int(int32(k))
}

// discreteDist is llama.cpp's llama_sample_dist: libstdc++'s
// std::discrete_distribution<int> over the candidates' probabilities,
// drawing from rng. With one candidate it returns 0 without drawing.
func discreteDist(cand []candidate, rng *mt19937) int {
	if len(cand) < 2 {
		return 0
	}
	var sum float64
	for _, c := range cand {
		sum += float64(c.p)
	}
	// generate_canonical<double, 53>: two 32-bit outputs, the first low.
	lo := float64(rng.next())
	hi := float64(float64(rng.next()) * 0x1p32) // rounded on its own: no fused multiply-add on arm64
	u := (lo + hi) * 0x1p-64
	if u >= 1 {
		u = math.Nextafter(1, 0)
	}
	var cum float64
	for i, c := range cand[:len(cand)-1] {
		cum += float64(c.p) / sum
		if cum >= u { // lower_bound: the first cumulative probability >= u
			return i
		}
	}
	return len(cand) - 1 // the last cumulative probability is set to 1
}

// logf, log2f and powf are C's float functions: the double result rounded.
func logf(x float32) float32    { return float32(math.Log(float64(x))) }
func log2f(x float32) float32   { return float32(math.Log2(float64(x))) }
func powf(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) }

// mirostatOnly is p as llama-server runs mirostat: logit bias, temperature,
// mirostat; the chain's other samplers off.
func mirostatOnly(p Params) Params {
	p.RepetitionPenalty, p.PresencePenalty, p.FrequencyPenalty = 0, 0, 0
	p.DryMultiplier, p.TopK, p.TopP, p.MinP, p.TypicalP, p.XTCProbability, p.MinKeep = 0, 0, 0, 0, 0, 0, 0
	p.Infill = nil
	return p
}
