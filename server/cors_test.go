package server_test

import (
	"net/http"
	"testing"

	"github.com/troupe-llm/troupe/server"
)

// TestCORSOrigins: as on Ollama, loopback origins may call the API with no
// --allowed-origins (a local front end on another port); other origins only
// when listed, where a "*" within one is a wildcard.
func TestCORSOrigins(t *testing.T) {
	plain := newFixture(t, options{})
	wild := newFixture(t, options{srv: server.Config{AllowedOrigins: []string{"https://*.example.com", "http://ui.example:3000", "http://[fe80::1]:*", "HTTP://*.Corp:8080"}}})
	for _, tc := range []struct {
		f      *fixture
		origin string
		want   bool
	}{
		{plain, "http://localhost:3000", true},
		{plain, "http://localhost", true},
		{plain, "https://LOCALHOST:8443", true},
		{plain, "http://127.0.0.1:5173", true},
		{plain, "http://[::1]:8080", true},
		{plain, "https://[::1]", true},
		{plain, "http://localhost.evil.example", false},
		{plain, "http://evil.example", false},
		{plain, "http://127.0.0.2:3000", false},
		{plain, "http://localhost:3000/path", false},
		{plain, "file://localhost", false},
		{plain, "null", false},
		{wild, "https://app.example.com", true},
		{wild, "https://a.b.example.com", true},
		{wild, "http://ui.example:3000", true},
		{wild, "http://ui.example:3001", false},
		{wild, "https://example.com", false},
		{wild, "http://app.example.com", false},
		{wild, "https://app.example.com.evil.example", false},
		{wild, "http://localhost:1234", true},
		{wild, "http://[fe80::1]:3000", true},
		{wild, "http://f:3000", false},
		{wild, "http://a.corp:8080", true},
		{wild, "http://a.corp:8081", false},
		{wild, "http://a/b.corp:8080", false},
	} {
		resp, _ := do(t, "OPTIONS", tc.f.url+"/v1/chat/completions", "Origin", tc.origin, "Access-Control-Request-Method", "POST")
		got := resp.Header.Get("Access-Control-Allow-Origin") == tc.origin && resp.Header.Get("Access-Control-Allow-Methods") != ""
		if resp.StatusCode != 204 || got != tc.want {
			t.Errorf("preflight from %q: %d, allowed %v; want 204, allowed %v (%v)", tc.origin, resp.StatusCode, got, tc.want, resp.Header)
		}
		// A body a page may send without a preflight (text/plain) runs
		// only from an allowed origin: else the cross-site guard's 403.
		code, b := send(t, http.MethodPost, tc.f.url+"/v1/completions", `{"prompt": "Once", "max_tokens": 1}`,
			map[string]string{"Origin": tc.origin, "Content-Type": "text/plain"})
		if wantCode := map[bool]int{true: 200, false: 403}[tc.want]; code != wantCode {
			t.Errorf("text/plain POST from %q: %d, want %d: %s", tc.origin, code, wantCode, b)
		}
	}
}
