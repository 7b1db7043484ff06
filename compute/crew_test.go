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
