package sample

import (
	"math"
	"testing"
)

// wantDist is softmax(logits/T) over the topK largest logits (all when 0),
// computed here apart from the sampler.
func wantDist(logits []float32, temp float32, topK int) []float64 {
	p := make([]float64, len(logits))
	keep := make([]bool, len(logits))
	for range max(topK, 0) {
		best := -1
		for i, l := range logits {
			if !keep[i] && (best < 0 || l > logits[best]) {
				best = i
			}
		}
		keep[best] = true
	}
	var sum float64
	for i, l := range logits {
		if topK == 0 || keep[i] {
			p[i] = math.Exp(float64(l) / float64(temp))
			sum += p[i]
		}
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

func totalVariation(a, b []float64) float64 {
	var tv float64
	for i := range a {
		tv += math.Abs(a[i] - b[i])
	}
	return tv / 2
}

// TestVerifyKeepsTheTargetDistribution runs the draft-then-verify rule over
// many seeds (fixed: the test cannot flake) on a vocabulary of six with
// scripted logits, and checks that the tokens that come out are distributed
// as the target's sampler draws them (total variation under 0.015 at 40000
// draws, where the error expected is about 0.004), that the acceptance rate
// is sum(min(p, q)), and that the bound would catch the rule that keeps the
// draft's token (whose output is q, at a distance above 0.1).
func TestVerifyKeepsTheTargetDistribution(t *testing.T) {
	target := []float32{2.0, 1.5, 0.3, -0.5, 1.0, -2.0}
	draft := []float32{0.5, 2.2, 1.0, 0.8, -1.0, 0.0}
	cases := []struct {
		name            string
		temp            float32
		targetK, draftK int
	}{
		{"temperature", 0.9, 0, 0},
		{"top-k: the target's support is smaller", 0.7, 2, 0},
		{"top-k: the draft's support is smaller", 1.3, 0, 3},
	}
	const n = 40000
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := mustNew(t, Params{Temperature: c.temp, TopK: c.targetK, HasSeed: true})
			ds := mustNew(t, Params{Temperature: c.temp, TopK: c.draftK, HasSeed: true})
			p, q := wantDist(target, c.temp, c.targetK), wantDist(draft, c.temp, c.draftK)
			got := make([]float64, len(target))
			accepted := 0
			var qd Dist
			var err error
			for seed := range uint64(n) {
				ds.Seek(seed^0x5eed, 7)
				if qd, err = ds.Dist(draft, nil, 0, qd); err != nil {
					t.Fatal(err)
				}
				x := ds.DrawDist(qd)
				ts.Seek(seed, 7)
				tok, err := ts.Verify(target, nil, x, qd)
				if err != nil {
					t.Fatal(err)
				}
				got[tok.ID] += 1.0 / n
				if tok.ID == x {
					accepted++
				}
			}
			if tv := totalVariation(got, p); tv > 0.015 {
				t.Errorf("output distribution %.4f, target's %.4f: total variation %.4f > 0.015", got, p, tv)
			}
			if tv := totalVariation(p, q); tv < 0.1 {
				t.Fatalf("the case does not tell the rule from keeping the draft: TV(p, q) = %.3f", tv)
			}
			var want float64
			for i := range p {
				want += min(p[i], q[i])
			}
			if rate := float64(accepted) / n; math.Abs(rate-want) > 0.015 {
				t.Errorf("acceptance %.4f, want sum(min(p, q)) = %.4f", rate, want)
			}
		})
	}
}

// TestVerifyIsReproducible: a seeded draw verifies the same way every time,
// whatever the sampler drew before.
func TestVerifyIsReproducible(t *testing.T) {
	target := []float32{2.0, 1.5, 0.3, -0.5}
	q := Dist{IDs: []int32{0, 1, 2, 3}, P: []float32{0.1, 0.6, 0.2, 0.1}}
	s, _ := New(Params{Temperature: 1, HasSeed: true})
	var first []int32
	for round := range 2 {
		for draw := range uint64(50) {
			s.Seek(42, draw)
			tok, err := s.Verify(target, nil, 1, q)
			if err != nil {
				t.Fatal(err)
			}
			if round == 0 {
				first = append(first, tok.ID)
			} else if tok.ID != first[draw] {
				t.Fatalf("draw %d: %d, then %d", draw, first[draw], tok.ID)
			}
		}
		s.Seek(1, 1000) // disturb the stream between rounds
		s.Sample(target, nil)
	}
}

// TestVerifyOneHotFallBack: without a distribution (greedy, mirostat, XTC)
// or with a q that does not hold the draft token, Verify is Sample.
func TestVerifyOneHotFallBack(t *testing.T) {
	target := []float32{2.0, 1.5, 0.3, -0.5}
	q := Dist{IDs: []int32{0, 1}, P: []float32{0.5, 0.5}}
	for _, c := range []struct {
		p Params
		x int32
	}{
		{Params{Temperature: 0}, 1},
		{Params{Temperature: 1, Mirostat: 2, MirostatTau: 5, MirostatEta: 0.1, HasSeed: true}, 1},
		{Params{Temperature: 1, HasSeed: true}, 3}, // q(3) = 0
	} {
		a, _ := New(c.p)
		b, _ := New(c.p)
		for draw := range uint64(20) {
			a.Seek(9, draw)
			b.Seek(9, draw)
			got, err := a.Verify(target, nil, c.x, q)
			want, err2 := b.Sample(target, nil)
			if err != nil || err2 != nil || got.ID != want.ID {
				t.Fatalf("%+v draw %d: Verify %d (%v), Sample %d (%v)", c.p, draw, got.ID, err, want.ID, err2)
			}
		}
		if _, err := a.Dist(target, nil, 0, Dist{}); c.p.HasDist() == (err != nil) {
			t.Errorf("%+v: HasDist %v, Dist's error %v", c.p, c.p.HasDist(), err)
		}
	}
}

// TestDistMinRatio: Dist leaves out tokens below minRatio times the
// largest, and renormalises.
func TestDistMinRatio(t *testing.T) {
	s, _ := New(Params{Temperature: 1, HasSeed: true})
	d, err := s.Dist([]float32{0, -1, -10, -20}, nil, 1e-3, Dist{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.IDs) != 2 || d.IDs[0] != 0 || d.IDs[1] != 1 {
		t.Fatalf("ids %v, want [0 1]", d.IDs)
	}
	if sum := d.P[0] + d.P[1]; math.Abs(float64(sum)-1) > 1e-6 {
		t.Fatalf("probabilities %v sum to %v", d.P, sum)
	}
}
