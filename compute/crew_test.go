package compute

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestCrew runs jobs of every share count back to back, with pauses long
// enough for helpers to park and to exit, and shares long enough for the
// caller to park, and checks that each share of each job ran exactly once,
// before run returned.
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
			time.Sleep(2 * time.Millisecond) // helpers park
		case 20:
			time.Sleep(2 * idleExit) // helpers exit
		}
	}
}

// TestCrewIdleExit checks that helpers exit once idle, so that an unused
// MatMuler holds no goroutines.
func TestCrewIdleExit(t *testing.T) {
	c := newCrew(2)
	c.run(3, func(int) {})
	deadline := time.Now().Add(20 * idleExit)
	for i := range c.helpers {
		for c.helpers[i].state.Load() != gone {
			if time.Now().After(deadline) {
				t.Fatalf("helper %d still %d after %v", i, c.helpers[i].state.Load(), 20*idleExit)
			}
			time.Sleep(time.Millisecond)
		}
	}
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
