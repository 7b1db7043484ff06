package actors

import (
	"sync"

	"github.com/troupe-llm/troupe/messages"
)

// NewOutputStream returns a stream for the output of a request of n
// choices; the function that sends into it, which never blocks, closing
// the stream after the Done chunk; and a channel closed on that chunk.
//
// Its memory follows what is produced and not yet read, never what a
// request may produce: a channel with room for one chunk per choice (one
// step of every choice), and, while the reader lags behind, a queue that a
// goroutine moves into the channel as the reader takes from it. That
// goroutine runs only while chunks are queued; it is stuck, with what is
// queued, if the reader stops reading before the stream is closed.
func NewOutputStream(n int) (<-chan *messages.OutputChunk, func(*messages.OutputChunk), <-chan struct{}) {
	q := &outputQueue{out: make(chan *messages.OutputChunk, max(n, 1)+1), done: make(chan struct{})}
	return q.out, q.send, q.done
}

// outputQueue is an unbounded FIFO in front of a channel. While no chunk is
// queued, send puts a chunk straight into the channel when it has room;
// otherwise the chunk is queued and a pump goroutine (at most one) moves
// the queue into the channel, in order, until the queue is empty.
type outputQueue struct {
	out  chan *messages.OutputChunk
	done chan struct{} // closed when the Done chunk is sent

	mu       sync.Mutex
	queued   []*messages.OutputChunk // waiting for room in out, oldest first
	spare    []*messages.OutputChunk // the pump's emptied batch, reused by queued
	pumping  bool                    // a pump goroutine owns the order: send must queue
	finished bool                    // the Done chunk was sent
}

// send passes c on; after the Done chunk, nothing more may be sent.
func (q *outputQueue) send(c *messages.OutputChunk) {
	q.mu.Lock()
	if q.finished {
		q.mu.Unlock()
		panic("actors: output sent after the Done chunk")
	}
	q.finished = c.Done
	if !q.pumping {
		select {
		case q.out <- c:
			q.mu.Unlock()
			if c.Done {
				close(q.out)
				close(q.done)
			}
			return
		default: // the reader lags: queue from here on
			q.pumping = true
			go q.pump()
		}
	}
	q.queued = append(q.queued, c)
	q.mu.Unlock()
	if c.Done {
		close(q.done)
	}
}

// pump moves the queue into out, blocking on the reader, until it finds the
// queue empty (send then writes to out directly again) or has passed the
// Done chunk on (it closes out).
func (q *outputQueue) pump() {
	for {
		q.mu.Lock()
		batch := q.queued
		if len(batch) == 0 {
			q.pumping = false
			q.mu.Unlock()
			return
		}
		q.queued, q.spare = q.spare[:0], nil
		q.mu.Unlock()
		for i, c := range batch {
			q.out <- c
			batch[i] = nil // read: let it go
			if c.Done {
				close(q.out)
				return
			}
		}
		q.mu.Lock()
		q.spare = batch[:0]
		q.mu.Unlock()
	}
}
