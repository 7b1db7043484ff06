package vision

import (
	"sync/atomic"
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
			sameOnWorkers(t, "encode", encodeWith(t, p, prepareFile(t, p, "big.png")))
		})
	}
}

// sameOnWorkers runs f on 1, 2 and 3 workers and fails where a value's bits
// differ from one worker's.
func sameOnWorkers(t *testing.T, what string, f func(mm *compute.MatMuler) []float32) {
	t.Helper()
	var want []float32
	for _, w := range []int{1, 2, 3} {
		got := f(compute.NewMatMuler(w))
		if w == 1 {
			want = got
		} else if i := firstBitDiff(got, want); i >= 0 {
			t.Errorf("%s on %d threads: value %d is %g, on one thread %g", what, w, i, got[i], want[i])
		}
	}
}

// encodeWith is p's encoding of prep as sameOnWorkers' f.
func encodeWith(t *testing.T, p *Projector, prep *Prepared) func(mm *compute.MatMuler) []float32 {
	return func(mm *compute.MatMuler) []float32 {
		got, err := p.Encode(mm, prep)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
}

// sameWhenJoined runs f on two workers until joins counts a worker joining
// a running what (three runs at least, 50 at most) and fails where a
// value's bits differ from f's on one worker; it skips when no worker
// joined.
func sameWhenJoined(t *testing.T, joins *atomic.Int64, what string, f func(mm *compute.MatMuler) []float32) {
	t.Helper()
	one := f(compute.NewMatMuler(1))
	j0 := joins.Load()
	for try := 0; try < 50 && (try < 3 || joins.Load() == j0); try++ {
		if i := firstBitDiff(f(compute.NewMatMuler(2)), one); i >= 0 {
			t.Fatalf("run %d on 2 workers: value %d differs from one worker's", try, i)
		}
	}
	if joins.Load() == j0 {
		// Which worker takes what is the scheduler's: on one CPU a
		// worker can run all the work before the other starts.
		t.Skipf("no worker joined a running %s in 50 runs", what)
	}
}
