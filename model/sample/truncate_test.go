package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// survivors runs truncate for p on logits and returns the surviving ids in
// id order.
func survivors(t *testing.T, p Params, logits []float32) []int32 {
	return sortedIDs(mustNew(t, p).truncate(logits, logits[Argmax(logits)]))
}

// sortedIDs returns the candidates' ids in id order.
func sortedIDs(cands []candidate) []int32 {
	var ids []int32
	for _, c := range cands {
		ids = append(ids, c.id)
	}
	slices.Sort(ids)
	return ids
}

// mustNew is New(p), failing the test on an error.
func mustNew(t *testing.T, p Params) *Sampler {
	t.Helper()
	s, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTruncate(t *testing.T) {
	// Probabilities 0.15, 0.5, 0.05, 0.3: in rank order 1, 3, 0, 2.
	logits := []float32{
		float32(math.Log(0.15)), float32(math.Log(0.5)), float32(math.Log(0.05)), float32(math.Log(0.3)),
	}
	tests := []struct {
		name string
		p    Params
		want []int32
	}{
		{"nothing", Params{}, []int32{0, 1, 2, 3}},
		{"top-k 1", Params{TopK: 1}, []int32{1}},
		{"top-k 3", Params{TopK: 3}, []int32{0, 1, 3}},
		{"top-k 4 is all", Params{TopK: 4}, []int32{0, 1, 2, 3}},
		{"top-p 0.45 keeps the argmax", Params{TopP: 0.45}, []int32{1}},
		{"top-p 0.7", Params{TopP: 0.7}, []int32{1, 3}},
		{"top-p 0.9", Params{TopP: 0.9}, []int32{0, 1, 3}},
		{"top-p 0.99", Params{TopP: 0.99}, []int32{0, 1, 2, 3}},
		{"min-p 0.2", Params{MinP: 0.2}, []int32{0, 1, 3}},
		{"min-p 0.5", Params{MinP: 0.5}, []int32{1, 3}},
		{"min-p 0.65", Params{MinP: 0.65}, []int32{1}},
		{"min-p 1 keeps the argmax", Params{MinP: 1}, []int32{1}},
		// After top-k 2 the probabilities are 0.625 and 0.375.
		{"top-p renormalizes after top-k", Params{TopK: 2, TopP: 0.6}, []int32{1}},
		{"top-k then top-p", Params{TopK: 2, TopP: 0.7}, []int32{1, 3}},
		// Top-p first keeps 1, 3, 0; min-p 0.4 then needs p >= 0.2.
		{"top-p then min-p", Params{TopP: 0.9, MinP: 0.4}, []int32{1, 3}},
		{"top-k, top-p, min-p", Params{TopK: 3, TopP: 0.99, MinP: 0.4}, []int32{1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Temperature = 1
			if got := survivors(t, tt.p, logits); !slices.Equal(got, tt.want) {
				t.Fatalf("survivors = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTruncateBans(t *testing.T) {
	ninf := float32(math.Inf(-1))
	logits := []float32{ninf, 1, ninf, 0}
	for _, p := range []Params{{}, {TopP: 0.999}, {MinP: 0.001}} {
		p.Temperature = 1
		if got := survivors(t, p, logits); !slices.Equal(got, []int32{1, 3}) {
			t.Errorf("%+v: survivors = %v, want [1 3]", p, got)
		}
	}
}

// reference truncates the slow, obvious way: sort everything by rank, then
// cut.
func reference(logits []float32, p Params) []int32 {
	var cand []candidate
	for i, x := range logits {
		cand = append(cand, candidate{id: int32(i), logit: x})
	}
	slices.SortFunc(cand, byRank)
	if p.topK(len(cand)) {
		cand = cand[:p.TopK]
	}
	if p.topP() {
		max, total := cand[0].logit, 0.0
		for i := range cand {
			cand[i].p = float32(math.Exp(float64(cand[i].logit - max)))
			total += float64(cand[i].p)
		}
		cum := 0.0
		for i := range cand {
			cum += float64(cand[i].p)
			if cum >= float64(p.TopP)*total {
				cand = cand[:i+1]
				break
			}
		}
	}
	if p.minP() {
		cand = keepAbove(cand, minPThreshold(cand[0].logit, p.MinP))
	}
	var ids []int32
	for _, c := range cand {
		ids = append(ids, c.id)
	}
	slices.Sort(ids)
	return ids
}

// randomLogits returns n logits with standard deviation scale, rounded to
// quarters when ties is set so that many are equal.
func randomLogits(rng *rand.Rand, n int, scale float64, ties bool) []float32 {
	l := make([]float32, n)
	for i := range l {
		x := rng.NormFloat64() * scale
		if ties {
			x = math.Round(x*4) / 4
		}
		l[i] = float32(x)
	}
	return l
}

// TestTruncateMatchesReference checks the heap top-k and the partially
// sorted top-p against sorting everything, on vocabularies large enough for
// top-p to rank several rounds.
func TestTruncateMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	params := []Params{
		{TopK: 1}, {TopK: 40}, {TopK: 1000}, {TopK: 4999},
		{TopP: 0.5}, {TopP: 0.9}, {TopP: 0.95}, {TopP: 0.999},
		{MinP: 0.05}, {MinP: 0.5},
		{TopK: 40, TopP: 0.95}, {TopK: 40, TopP: 0.95, MinP: 0.05}, {TopP: 0.95, MinP: 0.01},
	}
	for _, n := range []int{7, 300, 5000} {
		for _, scale := range []float64{0.5, 3} {
			for _, ties := range []bool{false, true} {
				logits := randomLogits(rng, n, scale, ties)
				for _, p := range params {
					p.Temperature = 1
					want := reference(logits, p)
					if got := survivors(t, p, logits); !slices.Equal(got, want) {
						t.Errorf("n=%d scale=%v ties=%v %+v: %d survivors, want %d",
							n, scale, ties, p, len(got), len(want))
					}
				}
			}
		}
	}
}

// TestTopPExactBoundary checks that top-p stops at the first token whose
// running mass equals p exactly: with 32 equal logits every weight is 1.
func TestTopPExactBoundary(t *testing.T) {
	logits := make([]float32, 32)
	tests := []struct {
		p    Params
		want int
	}{
		{Params{TopP: 0.25}, 8},
		{Params{TopP: 0.5}, 16},
		{Params{TopK: 20, TopP: 0.25}, 5},
	}
	for _, tt := range tests {
		tt.p.Temperature = 1
		got := survivors(t, tt.p, logits)
		// Ties go to the lowest ids.
		if len(got) != tt.want || got[len(got)-1] != int32(tt.want-1) {
			t.Errorf("%+v: survivors %v, want ids 0 to %d", tt.p, got, tt.want-1)
		}
	}
}

// TestTopPLastBucket puts the end of the top-p run among tokens more than
// 16 nats below the largest logit, all in the histogram's last bucket.
func TestTopPLastBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	logits := randomLogits(rng, 50000, 0.5, false)
	for i := range logits {
		logits[i] -= 17 // tail mass about 50000 * e^-17 = 0.2%
	}
	logits[123] = 0
	for _, topP := range []float32{0.9, 0.999, 0.9995, 0.9999} {
		p := Params{Temperature: 1, TopP: topP}
		want := reference(logits, p)
		if got := survivors(t, p, logits); !slices.Equal(got, want) {
			t.Errorf("top-p %v: %d survivors, want %d", topP, len(got), len(want))
		}
		t.Logf("top-p %v keeps %d", topP, len(want))
	}
}

func TestPrefixByMass(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 17, 100, 1000} {
		for _, ties := range []bool{false, true} {
			logits := randomLogits(rng, n, 1, ties)
			var all []candidate
			var total float64
			for i, x := range logits {
				all = append(all, candidate{id: int32(i), logit: x, p: float32(expNeg(float64(x - 2)))})
				total += float64(float32(expNeg(float64(x - 2))))
			}
			sorted := slices.Clone(all)
			slices.SortFunc(sorted, byRank)
			for _, frac := range []float64{0, 0.01, 0.3, 0.5, 0.9, 0.999, 1, 1.1} {
				target := frac * total
				want, cum := len(sorted), 0.0
				for i, c := range sorted {
					if cum += float64(c.p); cum >= target {
						want = i + 1
						break
					}
				}
				c := slices.Clone(all)
				rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
				k := prefixByMass(c, target)
				slices.SortFunc(c[:k], byRank)
				// Summing in another order may move the end by one token
				// when the mass lands within rounding of target; not here.
				if k != want || !slices.Equal(c[:k], sorted[:k]) {
					t.Errorf("n=%d ties=%v target %.3g of the mass: kept %d, want the top %d", n, ties, frac, k, want)
				}
			}
		}
	}
}

func TestTopKSorted(t *testing.T) {
	logits := []float32{1, 3, 3, -2, 3, 0}
	got := topK(make([]candidate, 4), logits, 4)
	want := []candidate{{id: 1, logit: 3}, {id: 2, logit: 3}, {id: 4, logit: 3}, {id: 0, logit: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("topK = %v, want %v", got, want)
	}
}
