package hub

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/hub/hubtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

const repoID = "karpathy/stories260K"

// ggufBytes is real model content to serve: stories260K.gguf (1.2 MB).
func ggufBytes(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newHub serves repoID with the GGUF as an LFS file and a small README.
func newHub(t *testing.T, gguf []byte) *hubtest.Server {
	return hubtest.New(t, hubtest.Repo{ID: repoID, Files: []hubtest.File{
		{Name: "stories260K.gguf", Data: gguf, LFS: true},
		{Name: "README.md", Data: []byte("# stories260K\nKarpathy's TinyStories model, MIT.\n")},
	}})
}

// options points at s with an empty cache, ignoring the environment.
func options(t *testing.T, s *hubtest.Server) Options {
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_ENDPOINT", "")
	t.Setenv("TROUPE_CACHE", "")
	return Options{Endpoint: s.URL, CacheDir: t.TempDir(), Client: &http.Client{Timeout: 2 * time.Minute}}
}

func mustParse(t *testing.T, s string) Ref {
	t.Helper()
	r, err := ParseURI(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func checkFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the %d served", path, len(got), len(want))
	}
}

// incomplete returns the partial download of data in the cache.
func incomplete(o Options, data []byte) string {
	return filepath.Join(o.CacheDir, "models--karpathy--stories260K", "blobs", hubtest.SHA256(data)+".incomplete")
}

func TestDownloadFile(t *testing.T) {
	gguf := ggufBytes(t)
	s := newHub(t, gguf)
	o := options(t, s)
	var progress bytes.Buffer
	o.Progress = &progress

	p, err := Download(context.Background(), mustParse(t, "hf://"+repoID+"/stories260K.gguf"), o)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, p, gguf)
	repoDir := filepath.Join(o.CacheDir, "models--karpathy--stories260K")
	blob := filepath.Join(repoDir, "blobs", hubtest.SHA256(gguf))
	if target, err := filepath.EvalSymlinks(p); err != nil || target != blob {
		t.Errorf("%s resolves to %q (%v), want the blob %s", p, target, err, blob)
	}
	if rel, _ := filepath.Rel(repoDir, p); !strings.HasPrefix(rel, "snapshots"+string(filepath.Separator)) {
		t.Errorf("path %s is not under snapshots/", rel)
	}
	ref, err := os.ReadFile(filepath.Join(repoDir, "refs", "main"))
	if err != nil || filepath.Base(filepath.Dir(p)) != string(ref) {
		t.Errorf("refs/main = %q (%v); snapshot %s", ref, err, filepath.Dir(p))
	}
	if got := progress.String(); !strings.Contains(got, "stories260K.gguf") || !strings.Contains(got, "100%") {
		t.Errorf("progress output %q: want the file name and 100%%", got)
	}

	// The small file is served by the resolve URL itself, with a git ETag.
	readme, err := Download(context.Background(), mustParse(t, "hf://"+repoID+"/README.md"), o)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, readme, []byte("# stories260K\nKarpathy's TinyStories model, MIT.\n"))
	if filepath.Dir(readme) != filepath.Dir(p) {
		t.Errorf("README.md in %s, the GGUF in %s: want one snapshot", filepath.Dir(readme), filepath.Dir(p))
	}

	var methods []string
	for _, r := range s.Requests() {
		methods = append(methods, r.Server+" "+r.Method+" "+http.StatusText(r.Status))
	}
	want := []string{"hub HEAD Found", "cdn GET OK", "hub HEAD OK", "hub GET OK"}
	if strings.Join(methods, ", ") != strings.Join(want, ", ") {
		t.Errorf("requests %v, want %v", methods, want)
	}
}

func TestCachedNeedsNoNetwork(t *testing.T) {
	gguf := ggufBytes(t)
	s := newHub(t, gguf)
	o := options(t, s)
	ref := mustParse(t, "hf://"+repoID+"/stories260K.gguf")
	first, err := Download(context.Background(), ref, o)
	if err != nil {
		t.Fatal(err)
	}
	before := len(s.Requests())
	second, err := Download(context.Background(), ref, o)
	if err != nil || second != first {
		t.Fatalf("second call: %q, %v; want %q", second, err, first)
	}
	if n := len(s.Requests()) - before; n != 0 {
		t.Errorf("second call made %d requests, want 0", n)
	}
	s.Close()
	third, err := Download(context.Background(), ref, o)
	if err != nil || third != first {
		t.Fatalf("with the server closed: %q, %v; want %q", third, err, first)
	}
	checkFile(t, third, gguf)

	// A file not in the cache needs the server, and says it cannot reach it.
	_, err = Download(context.Background(), mustParse(t, "hf://"+repoID+"/README.md"), o)
	if err == nil || !strings.Contains(err.Error(), "cannot reach 127.0.0.1") {
		t.Errorf("uncached file with the server closed: %v", err)
	}
	// CachedFiles lists what is cached (the GGUF, not the README), offline;
	// a repository never downloaded has none.
	if files, err := CachedFiles(ref, o); err != nil || !slices.Equal(files, []string{"stories260K.gguf"}) {
		t.Errorf("CachedFiles = %v, %v; want the GGUF alone", files, err)
	}
	if files, err := CachedFiles(mustParse(t, "hf://acme/never"), o); err != nil || len(files) != 0 {
		t.Errorf("CachedFiles of an uncached repository = %v, %v; want none", files, err)
	}
}

func TestResume(t *testing.T) {
	gguf := ggufBytes(t)
	const cut = 300_000
	for _, tc := range []struct {
		name        string
		ignoreRange bool
		wantStatus  int
	}{
		{"206", false, http.StatusPartialContent},
		{"server ignores Range", true, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newHub(t, gguf)
			o := options(t, s)
			ref := mustParse(t, "hf://"+repoID+"/stories260K.gguf")

			s.SetFault(gguf, hubtest.Fault{CutAfter: cut})
			_, err := Download(context.Background(), ref, o)
			if err == nil || !strings.Contains(err.Error(), "run again to resume") || errors.Is(err, ErrChecksum) {
				t.Fatalf("cut transfer: err = %v", err)
			}
			if st, err := os.Stat(incomplete(o, gguf)); err != nil || st.Size() != cut {
				t.Fatalf("partial file after the cut: %v, %v; want %d bytes", st, err, cut)
			}

			s.SetFault(gguf, hubtest.Fault{IgnoreRange: tc.ignoreRange})
			p, err := Download(context.Background(), ref, o)
			if err != nil {
				t.Fatal(err)
			}
			checkFile(t, p, gguf)
			tr := s.Transfers()
			last := tr[len(tr)-1]
			if last.Range != "bytes=300000-" || last.Status != tc.wantStatus {
				t.Errorf("resumed with Range %q, status %d; want bytes=300000-, %d", last.Range, last.Status, tc.wantStatus)
			}
			if _, err := os.Stat(incomplete(o, gguf)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("partial file left after success: %v", err)
			}
		})
	}
}

func TestChecksumMismatch(t *testing.T) {
	gguf := ggufBytes(t)
	s := hubtest.New(t, hubtest.Repo{ID: repoID, Files: []hubtest.File{
		{Name: "stories260K.gguf", Data: gguf, LFS: true, SHA256: strings.Repeat("ab", 32)},
	}})
	o := options(t, s)
	_, err := Download(context.Background(), mustParse(t, "hf://"+repoID+"/stories260K.gguf"), o)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "abababab") {
		t.Fatalf("err = %v, want ErrChecksum naming the announced sha256", err)
	}
	filepath.WalkDir(o.CacheDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("left in the cache: %s", path)
		}
		return err
	})
}

func TestContextCancel(t *testing.T) {
	gguf := ggufBytes(t)
	const sent = 200_000
	s := newHub(t, gguf)
	o := options(t, s)
	ref := mustParse(t, "hf://"+repoID+"/stories260K.gguf")
	s.SetFault(gguf, hubtest.Fault{CutAfter: sent, Stall: true})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Download(ctx, ref, o)
		done <- err
	}()
	select {
	case <-s.Stalled():
	case <-time.After(30 * time.Second):
		t.Fatal("the transfer never stalled")
	}
	// Wait until the client has written what was sent, then cancel.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if st, err := os.Stat(incomplete(o, gguf)); err == nil && st.Size() == sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the partial file never reached the bytes sent")
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Download did not return after cancel")
	}
	if st, err := os.Stat(incomplete(o, gguf)); err != nil || st.Size() != sent {
		t.Fatalf("partial file after cancel: %v, %v; want %d bytes kept", st, err, sent)
	}

	p, err := Download(context.Background(), ref, o)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, p, gguf)
	tr := s.Transfers()
	if last := tr[len(tr)-1]; last.Range != "bytes=200000-" || last.Status != http.StatusPartialContent {
		t.Errorf("resume after cancel: Range %q, status %d", last.Range, last.Status)
	}
}

func TestTokenGoesToTheHubOnly(t *testing.T) {
	gguf := ggufBytes(t)
	s := hubtest.New(t, hubtest.Repo{ID: repoID, Token: "hf_secret", Files: []hubtest.File{
		{Name: "stories260K.gguf", Data: gguf, LFS: true},
	}})
	o := options(t, s)
	t.Setenv("HF_TOKEN", "hf_secret") // Options.Token "" takes it from the environment
	if _, err := Download(context.Background(), mustParse(t, "hf://"+repoID+"/stories260K.gguf"), o); err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Requests() {
		want := map[string]string{"hub": "Bearer hf_secret", "cdn": ""}[r.Server]
		if r.Authorization != want {
			t.Errorf("%s %s %s: Authorization %q, want %q", r.Server, r.Method, r.Path, r.Authorization, want)
		}
	}
}

func TestErrors(t *testing.T) {
	gguf := ggufBytes(t)
	s := hubtest.New(t,
		hubtest.Repo{ID: repoID, Files: []hubtest.File{{Name: "stories260K.gguf", Data: gguf, LFS: true}}},
		hubtest.Repo{ID: "meta-llama/Llama-3.2-1B", Gated: true, Token: "hf_ok", Files: []hubtest.File{{Name: "m.gguf", Data: gguf, LFS: true}}},
		hubtest.Repo{ID: "meta-llama/Llama-3.1-8B", Gated: true, Denied: true, Token: "hf_ok", Files: []hubtest.File{{Name: "m.gguf", Data: gguf, LFS: true}}},
		hubtest.Repo{ID: "me/private", Token: "hf_ok", Files: []hubtest.File{{Name: "m.gguf", Data: gguf, LFS: true}}},
	)
	closed := hubtest.New(t)
	closed.Close()
	cases := []struct {
		name, uri, token, endpoint string
		is                         error
		says                       string
	}{
		{"no such repo", "hf://nobody/nothing/m.gguf", "", "", ErrNotFound, "repository nobody/nothing does not exist or is private (set HF_TOKEN"},
		{"no such file", "hf://" + repoID + "/missing.gguf", "", "", ErrNotFound, `has no file "missing.gguf" at revision "main"`},
		{"no such revision", "hf://" + repoID + "/stories260K.gguf@v9", "", "", ErrNotFound, `has no revision "v9"`},
		{"no such repo, listing", "hf://nobody/nothing", "", "", ErrNotFound, "does not exist or is private"},
		{"gated, no token", "hf://meta-llama/Llama-3.2-1B/m.gguf", "", "", ErrAccess, "meta-llama/Llama-3.2-1B is gated: accept its terms at " + s.URL + "/meta-llama/Llama-3.2-1B and set HF_TOKEN"},
		{"gated, not granted", "hf://meta-llama/Llama-3.1-8B/m.gguf", "hf_ok", "", ErrAccess, "(403): meta-llama/Llama-3.1-8B is gated and the token's account has not been granted access"},
		{"gated listing, no token", "hf://meta-llama/Llama-3.2-1B", "", "", ErrAccess, "is gated"},
		{"private, wrong token", "hf://me/private/m.gguf", "hf_bad", "", ErrNotFound, "the token sent has no access to it"},
		{"unreachable", "hf://" + repoID + "/stories260K.gguf", "", closed.URL, nil, "cannot reach 127.0.0.1:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, s)
			o.Token = tc.token
			if tc.endpoint != "" {
				o.Endpoint = tc.endpoint
			}
			_, err := Download(context.Background(), mustParse(t, tc.uri), o)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.HasPrefix(msg, "hub: "+tc.uri+": ") || !strings.Contains(msg, tc.says) || strings.Contains(msg, "\n") {
				t.Errorf("message %q: want one line starting with the URI and saying %q", msg, tc.says)
			}
			filepath.WalkDir(o.CacheDir, func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					t.Errorf("left in the cache: %s", path)
				}
				return err
			})
		})
	}
	// The same repository with the right token works.
	o := options(t, s)
	o.Token = "hf_ok"
	if _, err := Download(context.Background(), mustParse(t, "hf://me/private/m.gguf"), o); err != nil {
		t.Fatal(err)
	}
}

func TestOptions(t *testing.T) {
	t.Setenv("HF_ENDPOINT", "https://mirror.example/hf/")
	t.Setenv("HF_TOKEN", "hf_env")
	t.Setenv("TROUPE_CACHE", "/tmp/troupe-cache")
	o := Options{}.WithDefaults()
	if o.Endpoint != "https://mirror.example/hf" || o.Token != "hf_env" || o.CacheDir != "/tmp/troupe-cache" || o.Client == nil {
		t.Errorf("from the environment: %+v", o)
	}
	o = Options{Endpoint: "http://127.0.0.1:1", Token: "t", CacheDir: "/c"}.WithDefaults()
	if o.Endpoint != "http://127.0.0.1:1" || o.Token != "t" || o.CacheDir != "/c" {
		t.Errorf("options must win over the environment: %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
	t.Setenv("HF_ENDPOINT", "")
	t.Setenv("TROUPE_CACHE", "")
	o = Options{}.WithDefaults()
	if want, _ := os.UserCacheDir(); o.Endpoint != DefaultEndpoint || o.CacheDir != filepath.Join(want, "troupe", "hub") {
		t.Errorf("defaults: %+v", o)
	}
	for _, bad := range []string{"ftp://x", "huggingface.co", "http://"} {
		if err := (Options{Endpoint: bad, CacheDir: "/c"}).Validate(); err == nil {
			t.Errorf("endpoint %q accepted", bad)
		}
	}
	_, err := Download(context.Background(), Ref{Owner: "o", Repo: "../x", File: "f"}, Options{Endpoint: "http://127.0.0.1:1", CacheDir: t.TempDir()})
	if !errors.Is(err, ErrBadURI) {
		t.Errorf("a Ref built by hand is checked too: %v", err)
	}
}

func TestRenamedRepo(t *testing.T) {
	gguf := ggufBytes(t)
	ts := tinyStories(t)
	s := hubtest.New(t, hubtest.Repo{ID: repoID, Former: []string{"karpathy/tinyllamas"}, Files: []hubtest.File{
		{Name: "stories260K.gguf", Data: gguf, LFS: true},
		{Name: "config.json", Data: ts["config.json"]},
		{Name: "model.safetensors", Data: ts["model.safetensors"], LFS: true},
	}})
	o := options(t, s)
	p, err := Download(context.Background(), mustParse(t, "hf://karpathy/tinyllamas/stories260K.gguf"), o)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, p, gguf)
	dir, err := Download(context.Background(), mustParse(t, "hf://karpathy/tinyllamas"), o)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(dir, "model.safetensors"), ts["model.safetensors"])
	var redirects []string
	for _, r := range s.Requests() {
		if r.Status == http.StatusTemporaryRedirect {
			redirects = append(redirects, r.Method+" "+r.Path)
		}
	}
	want := []string{
		"HEAD /karpathy/tinyllamas/resolve/main/stories260K.gguf",
		"GET /api/models/karpathy/tinyllamas/revision/main",
	}
	if len(redirects) < 2 || !slices.Equal(redirects[:2], want) {
		t.Errorf("redirected requests %v, want %v first", redirects, want)
	}
}
