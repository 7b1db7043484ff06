package server

import (
	"net/http"
	"time"
)

// statusWriter records the status a handler wrote; it still flushes, so
// server-sent events stream through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// FlushError is Flush with its error, so that a flush that fails (a
// write deadline passed: streamwrite.go) is seen at once.
func (w *statusWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// quietPaths are logged at debug level only (unless they fail).
var quietPaths = map[string]bool{"/health": true, "/metrics": true}

// logged logs one line per request: method, path, status, duration, and
// whether the client went away first.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		ev := s.cfg.Log.Info()
		switch {
		case sw.status >= 500:
			ev = s.cfg.Log.Error()
		case quietPaths[r.URL.Path]:
			ev = s.cfg.Log.Debug() // probes and scrapes: every few seconds, all day
		}
		ev.Str("method", r.Method).Str("path", r.URL.Path).Int("status", sw.status).
			Dur("duration", time.Since(start)).Bool("client_gone", r.Context().Err() != nil).Msg("request")
	})
}
