package server

import (
	"net/http"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// sse writes server-sent events as OpenAI's streaming API does: one
// "data: JSON" event per chunk, flushed at once (pipeline.SSE), and
// "data: [DONE]" last. Once a write fails the client is gone and later
// events are dropped; the caller keeps draining its job, which the runtime
// cancels through the request's context.
type sse struct{ *pipeline.SSE }

func newSSE(w http.ResponseWriter) *sse { return &sse{pipeline.NewSSE(w)} }

// send writes one event.
func (s *sse) send(v any) { s.Event("", v) }

// end sends the final chunk (usage or timings), when there is one, then
// [DONE].
func (s *sse) end(final any) {
	if final != nil {
		s.send(final)
	}
	s.Write([]byte("data: [DONE]\n\n"))
}

// errorEvent is the event that reports a choice that failed mid-stream.
func errorEvent(msg string) any {
	return map[string]any{"error": &apiError{Message: msg, Type: "server_error"}}
}
