package server

import (
	"encoding/json"
	"net/http"
)

// sse writes server-sent events as OpenAI's streaming API does: one
// "data: JSON" event per chunk, flushed at once, and "data: [DONE]" last.
type sse struct {
	w       http.ResponseWriter
	f       http.Flusher
	started bool
	gone    bool // a write failed: the client went away
}

func newSSE(w http.ResponseWriter) *sse {
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// send writes one event. Once a write fails the client is gone and later
// events are dropped; the caller keeps draining its job, which the runtime
// cancels through the request's context.
func (s *sse) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"error": internal(err)})
	}
	s.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

func (s *sse) write(b []byte) {
	if s.gone {
		return
	}
	s.start()
	if _, err := s.w.Write(b); err != nil {
		s.gone = true
		return
	}
	if s.f != nil {
		s.f.Flush()
	}
}

// end sends the final chunk (usage or timings), when there is one, then
// [DONE].
func (s *sse) end(final any) {
	if final != nil {
		s.send(final)
	}
	s.write([]byte("data: [DONE]\n\n"))
}

// errorEvent is the event that reports a choice that failed mid-stream.
func errorEvent(msg string) any {
	return map[string]any{"error": &apiError{Message: msg, Type: "server_error"}}
}
