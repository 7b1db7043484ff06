package server

import (
	"fmt"
	"slices"
)

// The manager's queue (ManagerConfig.MaxQueue, serve's --models-queue,
// Ollama's OLLAMA_MAX_QUEUE): a request whose model cannot load because
// every model in the way is busy waits here, first come first served,
// until a model goes idle (its busy count drops to 0) or one is unloaded;
// then the head of the queue plans its load again. A request waiting for
// memory being freed (models_budget.go) waits here too.
//
// A queued request holds no model (its busy count is taken only once it
// leaves the queue), so the models in the way are busy only with requests
// running or waiting for a load already started: they become idle, and
// the head moves. While requests wait, a request for a model already
// loaded queues behind them as well (as Ollama's scheduler takes its
// requests in order), so that a stream of requests for a busy model cannot
// keep the head waiting for it forever.
//
// Wake-ups go to the head only (a buffered signal: never lost, at most one
// pending); a head that leaves the queue, served, refused or gone with
// its client, wakes the next one.

// waiter is a request in the queue.
type waiter struct {
	wake chan struct{} // a signal when it is the head and something changed: plan again
}

// behindLocked reports whether a request (w: its place in the queue, nil
// when it has none) must wait for the requests queued before it. Without a
// queue (MaxQueue 0) a request not queued never waits behind others: the
// ones waiting for memory being freed are not in its way.
func (m *Manager) behindLocked(w *waiter) bool {
	if len(m.queue) == 0 || m.queue[0] == w {
		return false
	}
	return w != nil || m.cfg.MaxQueue > 0
}

// waitLocked keeps the request w (nil: not queued yet) in the queue, to
// plan again when it is woken. freeing: it waits for memory being freed,
// which any request does, queue or not; else it waits for busy models, which
// only MaxQueue allows: full is the 503 when the queue has no room (or is
// off). A draining manager turns every waiter away.
func (m *Manager) waitLocked(w *waiter, freeing bool, full func() *apiError) (*waiter, *apiError) {
	switch {
	case m.draining:
		m.leaveLocked(w)
		return nil, unavailable("the server is shutting down")
	case !freeing && m.cfg.MaxQueue == 0:
		m.leaveLocked(w)
		return nil, full()
	case w != nil:
		return w, nil
	case !freeing && len(m.queue) >= m.cfg.MaxQueue:
		return nil, full()
	}
	w = &waiter{wake: make(chan struct{}, 1)}
	m.queue = append(m.queue, w)
	return w, nil
}

// queueFull is the 503 of a request that would wait behind a full queue.
func (m *Manager) queueFull() *apiError {
	return unavailable(fmt.Sprintf("%d requests wait for a model to load, as many as --models-queue %d allows; try again",
		len(m.queue), m.cfg.MaxQueue))
}

// leaveLocked takes w (nil: nothing) out of the queue; when it was the
// head, the next one plans in its place.
func (m *Manager) leaveLocked(w *waiter) {
	i := slices.Index(m.queue, w)
	if w == nil || i < 0 {
		return
	}
	m.queue = slices.Delete(m.queue, i, i+1)
	if i == 0 {
		m.wakeLocked()
	}
}

// leave is leaveLocked under the lock.
func (m *Manager) leave(w *waiter) {
	m.mu.Lock()
	m.leaveLocked(w)
	m.mu.Unlock()
}

// wakeLocked tells the head of the queue to plan again: a model went idle
// or left, or memory was freed.
func (m *Manager) wakeLocked() {
	if len(m.queue) == 0 {
		return
	}
	select {
	case m.queue[0].wake <- struct{}{}:
	default: // a signal is pending already
	}
}

// drainQueueLocked turns the queue away: every waiter wakes and finds the
// manager draining.
func (m *Manager) drainQueueLocked() {
	m.draining = true
	for _, w := range m.queue {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}
