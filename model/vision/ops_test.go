package vision

import (
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// TestParallelRows checks that parallelRows runs every row exactly once,
// in spans within [0, n), for row counts around its chunk sizes.
func TestParallelRows(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		mm := compute.NewMatMuler(workers)
		for _, n := range []int{0, 1, 2, 3, 15, 16, 17, 47, 48, 49, 1024, 1025} {
			seen := make([]int32, n)
			parallelRows(mm, n, func(lo, hi int) {
				if lo < 0 || hi > n || lo >= hi {
					t.Errorf("%d workers, %d rows: span [%d, %d)", workers, n, lo, hi)
					return
				}
				for i := lo; i < hi; i++ {
					seen[i]++ // each row's slot written by the one span that holds it
				}
			})
			for i, c := range seen {
				if c != 1 {
					t.Errorf("%d workers, %d rows: row %d run %d times", workers, n, i, c)
					break
				}
			}
		}
	}
}

// TestEncodeWorkers checks that every tiny shape's encoding has the same
// bits on one, two and three workers (the rows that parallelRows and the
// products split between them change with the count).
func TestEncodeWorkers(t *testing.T) {
	for _, shape := range []string{"gemma3-tiny", "idefics3-tiny", "qwen2vl-tiny", "qwen2.5vl-tiny", "qwen3vl-tiny"} {
		t.Run(shape, func(t *testing.T) {
			p := tinyProjector(t, shape)
			prep := prepareFile(t, p, "big.png")
			var want []float32
			for _, w := range []int{1, 2, 3} {
				got, err := p.Encode(compute.NewMatMuler(w), prep)
				if err != nil {
					t.Fatal(err)
				}
				if w == 1 {
					want = got
				} else if i := firstBitDiff(got, want); i >= 0 {
					t.Errorf("on %d threads: value %d is %g, on one thread %g", w, i, got[i], want[i])
				}
			}
		})
	}
}
