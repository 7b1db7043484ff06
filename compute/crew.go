package compute

import (
	"fmt"
	"sync/atomic"
	"time"
)

// crew runs the shares of a MatMul call on helper goroutines that outlive
// a call. A decode step makes a few hundred small products; starting a
// goroutine for each and waking an idle thread for it cost about 5% of a
// step. A helper that has run a share spins for a while (idleSpin) before
// it parks, so the next product of a forward pass
// usually finds it awake; a parked helper is woken through its channel,
// and one parked for idleExit exits (the next job starts it again), so an
// unused MatMuler holds no goroutines. The shares are claimed, caller and
// helpers alike, from a counter in the job word: the caller runs shares
// until none is left unclaimed (so a helper that has not yet woken, or
// whose thread waits for a CPU on a loaded machine, loses its share to the
// caller rather than making it wait), then spins for the shares in flight
// for up to waitSpin (longer than shares differ on a quiet machine: a
// parked caller costs a wake-up per product) and then parks (on a loaded machine, where a helper's thread may wait for
// a CPU, a caller spinning on would take it).
type crew struct {
	job     atomic.Uint64 // seq<<32 | shares<<16 | claimed of the latest job; helpers start when seq moves
	left    atomic.Int32  // shares of the job in flight not yet finished
	share   func(wi int)  // the job's body, read by its helpers
	helpers []helper      // (at most shares−1 of them are woken per job)

	// The caller spins for the helpers' shares like a helper for a job,
	// then parks: waiting says so, and the helper that finishes the last
	// share sends a token on done. A token can be left over from a job
	// whose caller stopped waiting just in time; the caller rechecks left.
	waiting atomic.Bool
	done    chan struct{} // cap 1

	idleExit time.Duration // how long a parked helper waits before it exits: idleExit (tests lengthen it)
}

// A helper's state moves running → parked (by itself), parked → running
// (by the caller, which then sends a wake token) or parked → gone (by
// itself, after idleExit), and gone → running (by the caller, which then
// starts a new goroutine).
const (
	running int32 = iota
	parked
	gone
)

type helper struct {
	state atomic.Int32
	wake  chan struct{} // cap 1: the token of a parked → running move
}

const (
	idleSpin = 200 * time.Microsecond // how long a helper spins for the next job before parking
	waitSpin = 500 * time.Microsecond // how long the caller spins for the others' shares before parking
	idleExit = 50 * time.Millisecond
)

func newCrew(helpers int) *crew {
	c := &crew{helpers: make([]helper, helpers), done: make(chan struct{}, 1), idleExit: idleExit}
	for i := range c.helpers {
		c.helpers[i].wake = make(chan struct{}, 1)
		c.helpers[i].state.Store(gone)
	}
	return c
}

// run runs share(0..shares-1) (shares ≤ len(helpers)+1), each share once,
// on the calling goroutine or a helper, and returns when all have finished.
// One job at a time.
func (c *crew) run(shares int, share func(wi int)) {
	if shares == 1 {
		share(0)
		return
	}
	prev := c.job.Load()
	c.share = share
	c.left.Store(int32(shares))
	c.job.Store((prev>>32+1)<<32 | uint64(shares)<<16) // publishes share to the helpers
	for i := range shares - 1 {
		h := &c.helpers[i]
		switch {
		case h.state.CompareAndSwap(parked, running):
			h.wake <- struct{}{}
		case h.state.CompareAndSwap(gone, running):
			go c.loop(h, prev)
		}
	}
	for c.claimRun() {
	}
	var since time.Time
	for spins := 0; c.left.Load() != 0; spins++ {
		if spins%256 != 255 || !spun(&since, waitSpin) { // the clock every 256th spin
			continue
		}
		c.waiting.Store(true)
		if c.left.Load() != 0 {
			<-c.done
		}
		c.waiting.Store(false)
	}
}

// spun reports whether a spell of spinning that began at *since has lasted
// d; its first call starts the spell (sets *since).
func spun(since *time.Time, d time.Duration) bool {
	if since.IsZero() {
		*since = time.Now()
	}
	return time.Since(*since) >= d
}

// claimRun claims a share of the latest job and runs it, and reports
// whether there was one to claim. The share's body is read after the claim:
// the job cannot finish, and the next one replace it, before the share is
// run.
func (c *crew) claimRun() bool {
	for {
		job := c.job.Load()
		claimed, shares := int(job&0xffff), int(job>>16&0xffff)
		if claimed >= shares {
			return false
		}
		if c.job.CompareAndSwap(job, job+1) {
			c.share(claimed)
			if c.left.Add(-1) == 0 && c.waiting.Load() {
				select {
				case c.done <- struct{}{}:
				default:
				}
			}
			return true
		}
	}
}

// loop is a helper's goroutine: claim and run shares of each job after
// seen; park when idle; exit when idle for idleExit.
func (c *crew) loop(h *helper, seen uint64) {
	idle := time.NewTimer(c.idleExit)
	idle.Stop()
	var since time.Time // when this spell of spinning began
	for spins := 0; ; spins++ {
		if job := c.job.Load(); job>>32 != seen>>32 {
			seen, spins, since = job, 0, time.Time{}
			for c.claimRun() {
			}
			continue
		}
		if spins%256 != 255 || !spun(&since, idleSpin) {
			continue
		}
		h.state.Store(parked)
		if c.job.Load()>>32 != seen>>32 { // a job came before the caller could see parked
			if !h.state.CompareAndSwap(parked, running) {
				<-h.wake // the caller took the move: take its token
			}
			since = time.Time{}
			continue
		}
		idle.Reset(c.idleExit)
		select {
		case <-h.wake:
			idle.Stop()
		case <-idle.C:
			if h.state.CompareAndSwap(parked, gone) {
				return
			}
			<-h.wake
		}
		spins, since = 0, time.Time{}
	}
}

// Workers returns how many goroutines mm splits its work over.
func (mm *MatMuler) Workers() int { return mm.workers }

// Parallel runs f(0..shares-1) (1 ≤ shares ≤ Workers()) on mm's crew, each
// once, on the calling goroutine or a helper, and returns when all have
// finished. It lets a
// caller run its own shares of work between products on the helpers that
// the products leave spinning, rather than on goroutines of its own that
// would wait for a CPU those helpers hold. f must not call mm's methods.
// Build f once: a func value made per call allocates.
func (mm *MatMuler) Parallel(shares int, f func(wi int)) {
	if shares < 1 || shares > mm.workers {
		panic(fmt.Sprintf("compute: Parallel: %d shares on %d workers", shares, mm.workers))
	}
	mm.crew.run(shares, f)
}
