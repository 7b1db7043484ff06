package server

import (
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
)

// Two guards against web pages that call a server on the user's machine
// (the default bind, 127.0.0.1, with no key):
//
//   - DNS rebinding: a page at evil.example re-points its name at 127.0.0.1
//     and then talks to the server as a same-origin page, with
//     "Host: evil.example". hostAllowed refuses such a Host (403), as
//     Ollama's and Jupyter's servers do.
//   - Cross-site requests: any page may POST a "CORS-simple" body
//     (text/plain, a form) to any address without a preflight, and the
//     server would run it. crossSite refuses a request from another origin
//     (not loopback nor in Config.AllowedOrigins: originAllowed) whose body
//     is not declared JSON (403); a JSON body from such a page needs a
//     preflight, which it does not get.

// guarded applies both guards before next.
func (s *Server) guarded(next http.Handler) http.Handler {
	hosts := newHostPolicy(s.cfg.BindHost, s.cfg.AllowedHosts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.allows(r.Host) {
			writeError(w, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: strp("host_not_allowed"),
				Message: "the Host header " + quote(r.Host) + " is not one this server answers to; " +
					"start it with --allowed-hosts NAME to allow it (a DNS-rebinding guard)"})
			return
		}
		if origin := r.Header.Get("Origin"); s.crossSite(r, origin) {
			writeError(w, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: strp("cross_origin_refused"),
				Message: "a " + r.Method + " from origin " + quote(origin) + " must have Content-Type: application/json, " +
					"and the origin must be in --allowed-origins"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// crossSite reports whether r is a request a browser may send from another
// site without a preflight and that must be refused: a method with a body,
// from an origin that is neither r's own nor allowed, with a content type
// other than JSON (text/plain, a form, or none).
func (s *Server) crossSite(r *http.Request, origin string) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	if origin == "" || s.originAllowed(origin) || sameOrigin(origin, r.Host) {
		return false
	}
	return !isJSONType(r.Header.Get("Content-Type"))
}

// sameOrigin reports whether origin (scheme://host[:port]) names host, the
// request's Host header: the server's own web page.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

// isJSONType reports whether a Content-Type is application/json or a
// +json type.
func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// hostPolicy says which Host headers the server answers.
type hostPolicy struct {
	all   bool            // no check: bound to a public or every address, no --allowed-hosts
	names map[string]bool // allowed names, lower case, no port
	// suffixes are allowed domain suffixes (".example.com": its subdomains).
	suffixes []string
}

// newHostPolicy builds the policy for a server bound to bindHost (--host;
// "": unknown, as in a handler embedded by a program) with the
// --allowed-hosts list. The check applies when the server listens on a
// loopback address only, or when the list is given; otherwise any Host
// passes, as on Ollama (a server reachable from the network is reached
// under names it cannot know). When it applies, these pass: IP literals
// (DNS rebinding needs a name), localhost and *.localhost, this machine's
// hostname, and the listed names ("*": any; ".example.com": example.com and
// its subdomains).
func newHostPolicy(bindHost string, allowed []string) *hostPolicy {
	p := &hostPolicy{names: map[string]bool{"localhost": true}}
	if len(allowed) == 0 && !isLoopbackHost(bindHost) {
		p.all = true
		return p
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		p.names[strings.ToLower(h)] = true
	}
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSpace(a))
		switch {
		case a == "*":
			p.all = true
		case strings.HasPrefix(a, "."):
			p.suffixes = append(p.suffixes, a)
			p.names[a[1:]] = true
		case a != "":
			p.names[hostOnly(a)] = true
		}
	}
	return p
}

// isLoopbackHost reports whether a --host value listens on loopback only.
func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && a.IsLoopback()
}

// allows reports whether the Host header hostport may be served.
func (p *hostPolicy) allows(hostport string) bool {
	if p.all {
		return true
	}
	h := hostOnly(hostport)
	if h == "" {
		return false // HTTP/1.1 requires Host; Go fills it for HTTP/1.0 from the URL
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	h = strings.TrimSuffix(h, ".")
	if p.names[h] || strings.HasSuffix(h, ".localhost") {
		return true
	}
	for _, s := range p.suffixes {
		if strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

// hostOnly is hostport's host, lower case, without brackets or port.
func hostOnly(hostport string) string {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = hostport
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}
