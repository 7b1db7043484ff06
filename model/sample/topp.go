package sample

import (
	"math"
	"math/bits"
	"slices"
)

// Top-p keeps the shortest run of tokens, in rank order, whose probability
// at temperature 1 adds up to at least p. Without top-k before it, sorting a
// 150k vocabulary for that would cost milliseconds, so topP narrows the
// search with a histogram of probability mass over logit buckets first.
const (
	topPBuckets       = 256 // of probability mass, by distance below the largest logit
	topPBucketsPerNat = 16  // so the last bucket holds every token 16 nats or more below it
)

// bucket is the histogram bucket of logit x, given the largest logit max.
// It never decreases as x does, so a lower bucket ranks before a higher one.
func bucket(max, x float32) int {
	return int(min((max-x)*topPBucketsPerNat, topPBuckets-1))
}

// topPSorted is top-p over cand sorted by rank, whose largest logit is max.
func topPSorted(cand []candidate, max, p float32) []candidate {
	var total float64
	for i := range cand {
		cand[i].p = float32(expNeg(float64(cand[i].logit - max)))
		total += float64(cand[i].p)
	}
	target := float64(float64(p) * total) // explicit conversion: no fused multiply-add, as amd64 computes it
	var cum float64
	for i, c := range cand {
		cum += float64(c.p)
		if cum >= target {
			return cand[:i+1]
		}
	}
	return cand // rounding kept cum just short of target
}

// topP is top-p over all of l, whose largest logit is max; it writes the
// survivors into dst (len(dst) >= len(l)) in no particular order. One pass
// sums the mass in each bucket and finds the bucket where the run reaches
// p; a second gathers the tokens up to that bucket; the run's end inside it
// is then found by prefixByMass.
func topP(dst []candidate, l []float32, max, p float32) []candidate {
	var mass [topPBuckets]float64
	var total float64
	for _, x := range l {
		// The weight is rounded to float32 here as in the candidates.
		w := float64(float32(expNeg(float64(x - max))))
		mass[bucket(max, x)] += w
		total += w
	}
	target := float64(float64(p) * total)
	last, before := 0, 0.0 // the run ends in bucket last; the buckets before it hold mass before
	for before+mass[last] < target && last < topPBuckets-1 {
		before += mass[last]
		last++
	}
	cand := dst[:0]
	for i, x := range l {
		if x >= -math.MaxFloat32 && bucket(max, x) <= last {
			cand = append(cand, candidate{id: int32(i), logit: x, p: float32(expNeg(float64(x - max)))})
		}
	}
	// Move the buckets before last to the front: they are all kept.
	k := 0
	for i, c := range cand {
		if bucket(max, c.logit) < last {
			cand[i], cand[k] = cand[k], c
			k++
		}
	}
	return cand[:k+prefixByMass(cand[k:], target-before)]
}

// prefixByMass reorders c so that c[:k] holds its k highest-ranked
// candidates, in no particular order, for the smallest k whose weights add up
// to at least target, and returns k (len(c) if they never do). It is a
// quickselect that follows the mass instead of a count: each round
// partitions the undecided range around a pivot and keeps everything before
// the pivot when that is still short of target. It sorts what is left when
// the range is small or the pivots make too little progress.
func prefixByMass(c []candidate, target float64) int {
	// c[:lo] is kept, ranks before c[lo:hi], and holds mass kept < target;
	// the answer ends in c[lo:hi]; c[hi:] is dropped.
	lo, hi, kept := 0, len(c), 0.0
	for budget := 2 * bits.Len(uint(hi)); hi-lo > 16 && budget > 0; budget-- {
		pv := lo + partition(c[lo:hi])
		var m float64
		for _, x := range c[lo:pv] {
			m += float64(x.p)
		}
		switch {
		case kept+m >= target:
			hi = pv
		case kept+m+float64(c[pv].p) >= target:
			return pv + 1
		default:
			lo, kept = pv+1, kept+m+float64(c[pv].p)
		}
	}
	slices.SortFunc(c[lo:hi], byRank)
	for i := lo; i < hi; i++ {
		kept += float64(c[i].p)
		if kept >= target {
			return i + 1
		}
	}
	return hi // rounding: summed in another order, the mass fell just short
}

// partition picks a pivot, moves the candidates that rank before it to its
// left and the others to its right, and returns its final index.
func partition(c []candidate) int {
	last, mid := len(c)-1, len(c)/2
	// Order c[0], c[mid], c[last] by rank, then use the median as pivot.
	if before(c[mid], c[0]) {
		c[mid], c[0] = c[0], c[mid]
	}
	if before(c[last], c[mid]) {
		c[last], c[mid] = c[mid], c[last]
		if before(c[mid], c[0]) {
			c[mid], c[0] = c[0], c[mid]
		}
	}
	c[0], c[mid] = c[mid], c[0]
	pivot, i := c[0], 1
	for j := 1; j < len(c); j++ {
		if before(c[j], pivot) {
			c[i], c[j] = c[j], c[i]
			i++
		}
	}
	c[0], c[i-1] = c[i-1], c[0]
	return i - 1
}
