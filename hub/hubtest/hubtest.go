// Package hubtest serves a fake Hugging Face hub on 127.0.0.1 for tests of
// package hub and of what uses it: the resolve URLs (HEAD and GET), the
// redirect of LFS files to a separate CDN server with X-Linked-Etag and
// X-Linked-Size, the model-info API with its siblings, the hub's error codes
// (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo), and faults
// injected into the next transfer of a file: a connection cut after N bytes,
// a stall until the client goes away, a server ignoring Range.
//
// A Server is safe for concurrent use; its handlers and its methods share
// one mutex.
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// File is one file of a repository.
type File struct {
	Name string // path in the repository, "/"-separated
	Data []byte
	// LFS files are answered with a 302 to the CDN and X-Linked-Etag /
	// X-Linked-Size; others are served by the resolve URL with an ETag.
	LFS bool
	// SHA256 overrides the sha256 an LFS file announces (to test a
	// mismatch); "" announces the true one.
	SHA256 string
}

// Repo is a model repository at one commit, reachable as revision "main"
// or by its commit.
type Repo struct {
	ID     string // "owner/name"
	Commit string // 40 hex digits; "" derives one from ID
	Files  []File
	// Token, when set, must come as "Authorization: Bearer Token"; without
	// it the hub answers 401 RepoNotFound, or 401 GatedRepo when Gated.
	Token string
	Gated bool
	// Denied (with Gated): the token is valid but its account was not
	// granted access: 403 GatedRepo.
	Denied bool
	// Former names (renamed repositories): their URLs are answered with a
	// relative 307 to the same URL under ID, as the hub does.
	Former []string
}

// Fault changes the next transfer of a file's bytes (resolve GET or CDN GET).
type Fault struct {
	CutAfter    int64 // > 0: send this many body bytes, then drop the connection
	Stall       bool  // with CutAfter: instead of dropping, wait until the client goes away
	IgnoreRange bool  // answer 200 with the whole file even when asked for a range
}

// Request is one request the servers answered.
type Request struct {
	Server        string // "hub" or "cdn"
	Method        string
	Path          string // unescaped
	Range         string // the Range header
	Authorization string
	Status        int
}

// Server is a fake hub (URL) and its CDN (CDNURL).
type Server struct {
	URL    string
	CDNURL string

	hub, cdn *httptest.Server
	stalled  chan struct{}

	mu     sync.Mutex
	repos  map[string]*Repo
	faults map[string]Fault // by file content sha256
	log    []Request
}

// New starts a hub serving repos, closed when the test ends.
func New(t testing.TB, repos ...Repo) *Server {
	s := &Server{repos: map[string]*Repo{}, faults: map[string]Fault{}, stalled: make(chan struct{}, 16)}
	for _, r := range repos {
		s.Add(r)
	}
	s.hub = httptest.NewServer(http.HandlerFunc(s.serveHub))
	s.cdn = httptest.NewServer(http.HandlerFunc(s.serveCDN))
	s.URL, s.CDNURL = s.hub.URL, s.cdn.URL
	t.Cleanup(s.Close)
	return s
}

// Add adds or replaces a repository.
func (s *Server) Add(r Repo) {
	if r.Commit == "" {
		sum := sha1.Sum([]byte(r.ID))
		r.Commit = hex.EncodeToString(sum[:])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[r.ID] = &r
}

// Close stops both servers; later requests fail to connect.
func (s *Server) Close() {
	s.hub.CloseClientConnections()
	s.cdn.CloseClientConnections()
	s.hub.Close()
	s.cdn.Close()
}

// SetFault applies f to the next transfer of data's bytes.
func (s *Server) SetFault(data []byte, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[SHA256(data)] = f
}

// Stalled receives once for each transfer that stalled (Fault.Stall) after
// sending its bytes.
func (s *Server) Stalled() <-chan struct{} { return s.stalled }

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Transfers returns the answered requests that carried file bytes: GETs of
// the CDN and GETs of resolve URLs answered 200 or 206.
func (s *Server) Transfers() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Method == http.MethodGet && (r.Server == "cdn" || strings.Contains(r.Path, "/resolve/")) &&
			(r.Status == http.StatusOK || r.Status == http.StatusPartialContent) {
			out = append(out, r)
		}
	}
	return out
}

// SHA256 is the hex sha256 of data.
func SHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// GitBlobID is the git object id the hub sends as the ETag of a small file.
func GitBlobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) record(server string, r *http.Request, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, Request{server, r.Method, r.URL.Path, r.Header.Get("Range"), r.Header.Get("Authorization"), status})
}

// serveHub answers /{owner}/{repo}/resolve/{revision}/{file} and
// /api/models/{owner}/{repo}/revision/{revision}.
func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, seg := range segs {
		segs[i], _ = url.PathUnescape(seg)
	}
	if len(segs) >= 4 {
		i := 0
		if segs[0] == "api" {
			i = 2
		}
		if to := s.renamed(segs[i] + "/" + segs[i+1]); to != "" {
			prefix := "/" + strings.Join(segs[:i], "/")
			if i == 0 {
				prefix = ""
			}
			rest := strings.SplitN(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/", i+3)[i+2]
			w.Header().Set("Location", prefix+"/"+to+"/"+rest)
			w.WriteHeader(http.StatusTemporaryRedirect)
			s.record("hub", r, http.StatusTemporaryRedirect)
			return
		}
	}
	switch {
	case len(segs) == 6 && segs[0] == "api" && segs[1] == "models" && segs[4] == "revision" && r.Method == http.MethodGet:
		s.serveInfo(w, r, segs[2]+"/"+segs[3], segs[5])
	case len(segs) >= 5 && segs[2] == "resolve" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.serveResolve(w, r, segs[0]+"/"+segs[1], segs[3], strings.Join(segs[4:], "/"))
	default:
		s.hubError(w, r, http.StatusNotFound, "", "no such route")
	}
}

// renamed returns the current ID of a repository formerly called id, or "".
func (s *Server) renamed(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.repos {
		for _, f := range r.Former {
			if f == id {
				return r.ID
			}
		}
	}
	return ""
}

// lookup finds the repository at revision and checks the request's token,
// answering the hub's error when it fails.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, id, revision string) *Repo {
	s.mu.Lock()
	repo := s.repos[id]
	s.mu.Unlock()
	switch {
	case repo == nil:
		s.hubError(w, r, http.StatusUnauthorized, "RepoNotFound", "Repository not found")
	case repo.Token != "" && r.Header.Get("Authorization") != "Bearer "+repo.Token && repo.Gated:
		s.hubError(w, r, http.StatusUnauthorized, "GatedRepo", "Access to model "+id+" is restricted. You must have access to it and be authenticated to access it.")
	case repo.Token != "" && r.Header.Get("Authorization") != "Bearer "+repo.Token:
		s.hubError(w, r, http.StatusUnauthorized, "RepoNotFound", "Repository not found")
	case repo.Denied:
		s.hubError(w, r, http.StatusForbidden, "GatedRepo", "Access to model "+id+" is restricted and you are not in the authorized list.")
	case revision != "main" && revision != repo.Commit:
		s.hubError(w, r, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+revision)
	default:
		return repo
	}
	return nil
}

func (s *Server) hubError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
	s.record("hub", r, status)
}

func (s *Server) serveInfo(w http.ResponseWriter, r *http.Request, id, revision string) {
	repo := s.lookup(w, r, id, revision)
	if repo == nil {
		return
	}
	type sibling struct {
		RFilename string `json:"rfilename"`
	}
	info := struct {
		ID       string    `json:"id"`
		SHA      string    `json:"sha"`
		Siblings []sibling `json:"siblings"`
	}{ID: id, SHA: repo.Commit}
	for _, f := range repo.Files {
		info.Siblings = append(info.Siblings, sibling{f.Name})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(info)
	s.record("hub", r, http.StatusOK)
}

func (s *Server) serveResolve(w http.ResponseWriter, r *http.Request, id, revision, name string) {
	repo := s.lookup(w, r, id, revision)
	if repo == nil {
		return
	}
	var file *File
	for i := range repo.Files {
		if repo.Files[i].Name == name {
			file = &repo.Files[i]
		}
	}
	if file == nil {
		s.hubError(w, r, http.StatusNotFound, "EntryNotFound", name+" does not exist on \""+revision+"\"")
		return
	}
	h := w.Header()
	h.Set("X-Repo-Commit", repo.Commit)
	if file.LFS {
		sha := file.SHA256
		if sha == "" {
			sha = SHA256(file.Data)
		}
		h.Set("X-Linked-Etag", `"`+sha+`"`)
		h.Set("X-Linked-Size", fmt.Sprint(len(file.Data)))
		h.Set("ETag", `"`+GitBlobID(file.Data)+`"`)
		h.Set("Location", s.CDNURL+"/repos/"+SHA256(file.Data)+"?signed=1")
		w.WriteHeader(http.StatusFound)
		s.record("hub", r, http.StatusFound)
		return
	}
	h.Set("ETag", `"`+GitBlobID(file.Data)+`"`)
	s.serveBytes("hub", w, r, file.Data)
}

// serveCDN answers /repos/{sha256} with the bytes of any file with that
// content.
func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	sha := strings.TrimPrefix(r.URL.Path, "/repos/")
	s.mu.Lock()
	var data []byte
	for _, repo := range s.repos {
		for _, f := range repo.Files {
			if f.LFS && SHA256(f.Data) == sha {
				data = f.Data
			}
		}
	}
	s.mu.Unlock()
	if data == nil || r.URL.Query().Get("signed") != "1" {
		http.Error(w, "AccessDenied", http.StatusForbidden)
		s.record("cdn", r, http.StatusForbidden)
		return
	}
	s.serveBytes("cdn", w, r, data)
}

// serveBytes serves data with Range support, applying and clearing the
// fault set for it.
func (s *Server) serveBytes(server string, w http.ResponseWriter, r *http.Request, data []byte) {
	var f Fault
	if r.Method == http.MethodGet {
		s.mu.Lock()
		f = s.faults[SHA256(data)]
		delete(s.faults, SHA256(data))
		s.mu.Unlock()
	}
	cw := &countingWriter{ResponseWriter: w, limit: f.CutAfter, onHeader: func(status int) { s.record(server, r, status) }}
	served := r
	if f.IgnoreRange {
		served = r.Clone(r.Context())
		served.Header.Del("Range")
	}
	// A cut ends the handler with http.ErrAbortHandler, which makes the
	// server drop the connection in the middle of the body.
	defer func() {
		if v := recover(); v == errCut {
			if f.Stall {
				s.stalled <- struct{}{}
				<-r.Context().Done()
			}
			panic(http.ErrAbortHandler)
		} else if v != nil {
			panic(v)
		}
	}()
	http.ServeContent(cw, served, "", time.Time{}, bytes.NewReader(data))
}

var errCut = fmt.Errorf("hubtest: connection cut")

// countingWriter reports the status to onHeader, and passes limit body
// bytes, then flushes them and panics with errCut (limit <= 0: no limit).
type countingWriter struct {
	http.ResponseWriter
	limit, n int64
	onHeader func(int)
	wrote    bool
}

func (w *countingWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		w.onHeader(status)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.limit > 0 && w.n+int64(len(p)) > w.limit {
		p = p[:w.limit-w.n]
		w.ResponseWriter.Write(p)
		http.NewResponseController(w.ResponseWriter).Flush()
		panic(errCut)
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}
