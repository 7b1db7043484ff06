package server

import (
	"net/http"
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

// originAllowed reports whether origin is one of Config.AllowedOrigins
// ("*": any).
func (s *Server) originAllowed(origin string) bool {
	for _, o := range s.cfg.AllowedOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}
