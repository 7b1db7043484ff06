package server

import (
	"net/http"
	"net/url"
	"strings"
)

// The handler chain around the route table (Server.Handler): logged, then
// unprefixed, then cors, then the mux. Routes are registered once, under
// /v1 where OpenAI puts them; these wrappers add what applies to every route.

// unprefixed serves each /v1/ route also without the prefix (/models,
// /chat/completions, ...), as llama-server does: a path that no route of
// its own matches is tried again with /v1 in front. (A path with a route
// of its own for another method, or OPTIONS, stays as it is.)
func (s *Server) unprefixed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; !strings.HasPrefix(p, "/v1/") && p != "/v1" && s.catchAll(r) {
			u := *r.URL
			u.Path, u.RawPath = "/v1"+p, ""
			r2 := r.WithContext(r.Context())
			r2.URL = &u
			if !s.catchAll(r2) || len(s.allowedMethods(r)) == 0 && len(s.allowedMethods(r2)) > 0 {
				r = r2
			}
		}
		next.ServeHTTP(w, r)
	})
}

// catchAll reports whether r reaches no route of its own: only the
// catch-all "/" (or, with a method, no route at all).
func (s *Server) catchAll(r *http.Request) bool {
	_, pattern := s.mux.Handler(r)
	path := pattern[strings.IndexByte(pattern, ' ')+1:] // "GET /x" or "/x"
	return path == "" || path == "/"
}

// probeMethods are the methods OPTIONS looks for on a path.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowedMethods lists the methods some route serves r's path with.
func (s *Server) allowedMethods(r *http.Request) []string {
	var out []string
	for _, m := range probeMethods {
		r2 := r.WithContext(r.Context()) // a shallow copy
		r2.Method = m
		if !s.catchAll(r2) {
			out = append(out, m)
		}
	}
	return out
}

// cors answers OPTIONS on every route (204 with Allow; a CORS preflight
// from an allowed origin also gets the Access-Control-Allow-* headers) and
// marks the responses to allowed origins (Config.AllowedOrigins).
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		origin := r.Header.Get("Origin")
		allowed := origin != "" && s.originAllowed(origin)
		if allowed {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "Retry-After")
		}
		if r.Method != http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		methods := s.allowedMethods(r)
		if len(methods) == 0 {
			writeError(w, notFound("", "no route %s", r.URL.Path))
			return
		}
		list := strings.Join(append(methods, http.MethodOptions), ", ")
		h.Set("Allow", list)
		if allowed && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", list)
			headers := r.Header.Get("Access-Control-Request-Headers")
			if headers == "" {
				headers = "Authorization, Content-Type"
			}
			h.Set("Access-Control-Allow-Headers", headers)
			h.Set("Access-Control-Max-Age", "600")
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// originAllowed reports whether origin is a loopback origin, allowed
// whatever Config.AllowedOrigins says as in Ollama's defaults (a page
// served from this machine: a local front end on another port), or
// matches one of Config.AllowedOrigins ("*": any; "https://*.example.com":
// a wildcard), case-insensitively.
func (s *Server) originAllowed(origin string) bool {
	return loopbackOrigin(origin) || originMatches(origin, s.cfg.AllowedOrigins)
}

// loopbackOrigin reports whether origin is http(s)://localhost,
// 127.0.0.1 or [::1], with or without a port.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Path != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	switch h := strings.ToLower(u.Hostname()); h {
	case "localhost", "127.0.0.1":
		return true
	case "::1":
		return strings.HasPrefix(u.Host, "[") // as browsers write it
	}
	return false
}

// originMatches reports whether origin matches one of patterns,
// case-insensitively: "*" matches any origin, and a "*" within a pattern
// any run of characters but "/".
func originMatches(origin string, patterns []string) bool {
	origin = strings.ToLower(origin)
	for _, p := range patterns {
		if p == "*" || wildcardMatch(strings.ToLower(p), origin) {
			return true
		}
	}
	return false
}

// wildcardMatch reports whether s matches pattern, in which each "*"
// stands for a run of characters without "/" (the only special character:
// an IPv6 origin's brackets are literal).
func wildcardMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, part := range parts[1:] {
		j := strings.Index(s, part) // the leftmost match leaves the most for the rest
		if i == len(parts)-2 {
			j = len(s) - len(part) // the last part ends the string
			if j < 0 || s[j:] != part {
				return false
			}
		}
		if j < 0 || strings.Contains(s[:j], "/") {
			return false
		}
		s = s[j+len(part):]
	}
	return len(parts) > 1 || s == ""
}
