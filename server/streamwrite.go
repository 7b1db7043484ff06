package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"
)

// A client that stops reading its response (a stream, or a large body)
// would block the handler's next write for as long as it keeps the socket
// open, and with it the request's admission slot, its sequences and their
// queued output. Every response is therefore written through a
// stallWriter: each write must make progress within
// Config.WriteStallTimeout (a per-write deadline on the connection), and a
// write that does not fails and cancels the request, which frees its
// sequences, then its slot. The output a request queues for its client is
// bounded too (job.push, Config.MaxQueuedOutputBytes).

// errWriteStalled is the cause of a request cancelled because its client
// stopped reading.
var errWriteStalled = errors.New("the client stopped reading its response")

// writeChunk is the most bytes written under one deadline: a large body is
// written in pieces, so a slow reader that keeps reading is not cut off.
const writeChunk = 64 << 10

// stallBounded gives every request a cancellable context and a stallWriter.
func (s *Server) stallBounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		sw := &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: s.cfg.WriteStallTimeout, cancel: cancel, s: s, r: r}
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// stallWriter is a ResponseWriter whose writes and flushes each have
// stall to make progress; the first that does not cancels the request and
// fails every later one.
type stallWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	stall  time.Duration
	cancel context.CancelCauseFunc
	failed error
	s      *Server
	r      *http.Request
}

// arm sets the connection's write deadline one stall from now. (Every
// response arms it before it writes, so a deadline left by an earlier
// response on a kept-alive connection does not matter.)
func (w *stallWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.stall)) }

func (w *stallWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		if w.failed != nil {
			return written, w.failed
		}
		piece := b[:min(len(b), writeChunk)]
		w.arm()
		n, err := w.ResponseWriter.Write(piece)
		written += n
		if err != nil {
			w.fail(err)
			return written, w.failed
		}
		b = b[n:]
	}
	return written, nil
}

// Flush sends what is buffered, within the stall bound.
func (w *stallWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush with its error (http.ResponseController uses it).
func (w *stallWriter) FlushError() error {
	if w.failed != nil {
		return w.failed
	}
	w.arm()
	if err := w.rc.Flush(); err != nil {
		w.fail(err)
		return w.failed
	}
	return nil
}

// Unwrap lets http.ResponseController reach the connection.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// fail cancels the request: its client is gone or not reading.
func (w *stallWriter) fail(err error) {
	w.failed = fmt.Errorf("%w: %v", errWriteStalled, err)
	if errors.Is(err, os.ErrDeadlineExceeded) { // not a client that closed: one that stopped reading
		w.s.cfg.Log.Warn().Str("path", w.r.URL.Path).Dur("stall", w.stall).
			Msg("a client did not read its response within --write-stall-timeout; the request is cancelled")
	}
	w.cancel(w.failed)
}
