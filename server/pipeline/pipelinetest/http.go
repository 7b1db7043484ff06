package pipelinetest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Post sends body to path through a mux that register fills (a
// dialect's routes), and returns the recorded response.
func Post(register func(*http.ServeMux), path, body string) *httptest.ResponseRecorder {
	mux := http.NewServeMux()
	register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return rec
}

// Parts checks that body, its ends trimmed and split at sep (NDJSON's
// lines, SSE's events), has one part per want, each holding its want.
func Parts(t testing.TB, body, sep string, want []string) {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(body), sep)
	if len(parts) != len(want) {
		t.Fatalf("%d parts, want %d:\n%s", len(parts), len(want), body)
	}
	for i, w := range want {
		if !strings.Contains(parts[i], w) {
			t.Errorf("part %d is %s; want it to hold %s", i, parts[i], w)
		}
	}
}
