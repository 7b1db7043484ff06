package compute

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestCrew runs jobs of every share count back to back, with pauses until
// the helpers have parked and until they have exited, and shares long enough
// for the caller to park (a share may run on the caller, so this one is a
// sleep, not a wait: the test passes either way), and checks that each share
// of each job ran exactly once, before run returned.
func TestCrew(t *testing.T) {
	const helpers = 3
	c := newCrew(helpers)
	var ran [helpers + 1]atomic.Int32
	for job := range 300 {
		shares := 1 + job%(helpers+1)
		for i := range ran {
			ran[i].Store(0)
		}
		c.run(shares, func(wi int) {
			if wi > 0 && job%7 == 3 {
				time.Sleep(time.Millisecond) // the caller parks
			}
			ran[wi].Add(1)
		})
		for i := range ran {
			want := int32(0)
			if i < shares {
				want = 1
			}
			if got := ran[i].Load(); got != want {
				t.Fatalf("job %d (%d shares): share %d ran %d times", job, shares, i, got)
			}
		}
		switch job % 50 {
		case 10:
			waitHelpers(t, c, shares-1, parked) // or gone, if it was slow to look
		case 20:
			waitHelpers(t, c, helpers, gone)
		}
	}
}

// waitHelpers waits until the first n helpers of c are in state, failing t
// after 30 s. A helper parked for idleExit exits, so gone counts as parked.
func waitHelpers(t *testing.T, c *crew, n int, state int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := range n {
		for st := c.helpers[i].state.Load(); st != state && !(state == parked && st == gone); st = c.helpers[i].state.Load() {
			if time.Now().After(deadline) {
				t.Fatalf("helper %d in state %d, not %d, after 30s", i, c.helpers[i].state.Load(), state)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestCrewIdleExit checks that helpers exit once idle, so that an unused
// MatMuler holds no goroutines.
func TestCrewIdleExit(t *testing.T) {
	c := newCrew(2)
	c.run(3, func(int) {})
	waitHelpers(t, c, len(c.helpers), gone)
}

// TestParallel checks that MatMuler.Parallel runs each share once, then
// that the crew still runs products, and that a share count out of range
// is refused.
func TestParallel(t *testing.T) {
	mm := NewMatMuler(3)
	var ran [3]atomic.Int32
	share := func(wi int) { ran[wi].Add(1) }
	for shares := 1; shares <= 3; shares++ {
		for i := range ran {
			ran[i].Store(0)
		}
		mm.Parallel(shares, share)
		for i := range ran {
			if want := int32(min(1, max(0, shares-i))); ran[i].Load() != want {
				t.Fatalf("%d shares: share %d ran %d times, want %d", shares, i, ran[i].Load(), want)
			}
		}
		w := &Tensor{Name: "w", Type: F32, Shape: []int{4, 6}, Data: make([]byte, 4*6*4)}
		if err := mm.MatMul(make([]float32, 6), make([]float32, 4), 1, w); err != nil {
			t.Fatal(err)
		}
	}
	for _, shares := range []int{0, 4} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Parallel(%d) on 3 workers did not panic", shares)
				}
			}()
			mm.Parallel(shares, share)
		}()
	}
}
