package server

import (
	"sync"

	"github.com/troupe-llm/troupe/messages"
)

// outQueue holds a job's chunks between the runtime's streams and the
// handler. Its pushes never block (the runtime's side keeps no backlog of
// its own), and it counts the bytes it holds: past limit, it calls
// overflow once, which cancels the job (a client that reads slower than
// the model writes cannot make the server hold its output without bound).
type outQueue struct {
	mu         sync.Mutex
	items      []choiceChunk
	bytes      int
	limit      int
	closed     bool
	overflowed bool
	wake       chan struct{} // a token when items or closed changed
	overflow   func()
}

func newOutQueue(limit int, overflow func()) *outQueue {
	return &outQueue{limit: limit, overflow: overflow, wake: make(chan struct{}, 1)}
}

// chunkBytes estimates what a chunk holds: its text and its tokens (with
// their logprobs).
func chunkBytes(c *messages.OutputChunk) int {
	n := 64 + len(c.Text) + len(c.Err)
	for _, t := range c.Tokens {
		n += 32 + 32*len(t.Top)
	}
	return n
}

// push appends cc.
func (q *outQueue) push(cc choiceChunk) {
	q.mu.Lock()
	q.items = append(q.items, cc)
	q.bytes += chunkBytes(cc.c)
	over := q.bytes > q.limit && !q.overflowed
	if over {
		q.overflowed = true
	}
	q.mu.Unlock()
	q.signal()
	if over {
		q.overflow()
	}
}

// close marks the end: pop returns false once the queue is empty.
func (q *outQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *outQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop returns the oldest chunk, waiting for one; false after close once
// every chunk has been taken.
func (q *outQueue) pop() (choiceChunk, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			cc := q.items[0]
			q.items[0] = choiceChunk{}
			q.items = q.items[1:]
			q.bytes -= chunkBytes(cc.c)
			q.mu.Unlock()
			return cc, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return choiceChunk{}, false
		}
		<-q.wake
	}
}

// hasOverflowed reports whether the queue went past its limit.
func (q *outQueue) hasOverflowed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.overflowed
}
