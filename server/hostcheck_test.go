package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/server"
)

// send posts body to url with the given headers (Host among them, when
// set) and returns the status and the body.
func send(t *testing.T, method, url, body string, header map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, b := roundTrip(t, req)
	return resp.StatusCode, b
}

// errorCode reads the code of an OpenAI-shaped error body ("" if it has
// none or is not one).
func errorCode(b []byte) string {
	var e struct {
		Error *struct {
			Message string  `json:"message"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Code == nil || e.Error.Message == "" {
		return ""
	}
	return *e.Error.Code
}

// TestHostCheck: a server bound to loopback answers localhost, IP literals
// and --allowed-hosts names, and refuses any other Host (DNS rebinding)
// with a 403 in OpenAI's shape; bound to every address, it answers any Host.
func TestHostCheck(t *testing.T) {
	loop := newFixture(t, options{srv: server.Config{BindHost: "127.0.0.1", AllowedHosts: []string{"api.example.com", ".corp.example"}}})
	open := newFixture(t, options{srv: server.Config{BindHost: "0.0.0.0"}})
	body := `{"prompt": "Once", "max_tokens": 1}`
	json := map[string]string{"Content-Type": "application/json"}
	for _, tc := range []struct {
		f    *fixture
		host string
		want int
	}{
		{loop, "localhost:8080", 200},
		{loop, "LOCALHOST", 200},
		{loop, "127.0.0.1:1", 200},
		{loop, "[::1]:8080", 200},
		{loop, "app.localhost", 200},
		{loop, "api.example.com:443", 200},
		{loop, "x.corp.example", 200},
		{loop, "evil.example", 403},
		{loop, "example.com.evil.example", 403},
		{loop, "localhost.evil.example", 403},
		{open, "evil.example", 200},
	} {
		json["Host"] = tc.host
		code, b := send(t, http.MethodPost, tc.f.url+"/v1/completions", body, json)
		if code != tc.want {
			t.Errorf("Host %q: status %d, want %d: %s", tc.host, code, tc.want, b)
		}
		if tc.want == 403 && errorCode(b) != "host_not_allowed" {
			t.Errorf("Host %q: body %s, want an OpenAI error with code host_not_allowed", tc.host, b)
		}
		if code, b := send(t, http.MethodGet, tc.f.url+"/health", "", map[string]string{"Host": tc.host}); code != tc.want {
			t.Errorf("GET /health with Host %q: status %d, want %d: %s", tc.host, code, tc.want, b)
		}
	}
}

// TestCrossSitePost: a body a web page on another site can send without a
// preflight (text/plain, a form, no type) is refused when it comes with a
// foreign Origin; JSON bodies, requests without an Origin (curl -d), the
// server's own page and allowed origins go through.
func TestCrossSitePost(t *testing.T) {
	f := newFixture(t, options{srv: server.Config{AllowedOrigins: []string{"https://app.example"}}})
	host := strings.TrimPrefix(f.url, "http://")
	body := `{"prompt": "Once", "max_tokens": 1}`
	for _, tc := range []struct {
		path, origin, ctype string
		want                int
	}{
		{"/v1/completions", "https://evil.example", "text/plain;charset=UTF-8", 403},
		{"/v1/completions", "https://evil.example", "application/x-www-form-urlencoded", 403},
		{"/v1/completions", "https://evil.example", "multipart/form-data; boundary=x", 403},
		{"/v1/completions", "https://evil.example", "", 403},
		{"/v1/completions", "null", "text/plain", 403},
		{"/api/generate", "https://evil.example", "text/plain", 403},
		{"/tokenize", "https://evil.example", "text/plain", 403},
		{"/v1/completions", "https://evil.example", "application/json", 200}, // a browser preflights it, and gets no CORS grant
		{"/v1/completions", "", "application/x-www-form-urlencoded", 200},    // curl -d
		{"/v1/completions", "", "text/plain", 200},
		{"/v1/completions", "http://" + host, "text/plain", 200}, // the server's own page
		{"/v1/completions", "https://app.example", "text/plain", 200},
	} {
		h := map[string]string{}
		if tc.origin != "" {
			h["Origin"] = tc.origin
		}
		if tc.ctype != "" {
			h["Content-Type"] = tc.ctype
		}
		b := body
		if tc.path == "/api/generate" {
			b = `{"prompt": "Once", "stream": false, "options": {"num_predict": 1}}`
		}
		code, got := send(t, http.MethodPost, f.url+tc.path, b, h)
		if code != tc.want {
			t.Errorf("%s from %q as %q: status %d, want %d: %s", tc.path, tc.origin, tc.ctype, code, tc.want, got)
		}
		if tc.want == 403 && errorCode(got) != "cross_origin_refused" {
			t.Errorf("%s from %q as %q: body %s, want an OpenAI error with code cross_origin_refused", tc.path, tc.origin, tc.ctype, got)
		}
	}
}
