package hub

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Download makes ref available in the cache and returns its local path: the
// file for a file reference, the snapshot directory for a repository
// reference (see the package documentation for which files it holds). What
// is complete in the cache is not fetched again, and needs no network.
//
// A download goes to blobs/{etag}.incomplete and is renamed into place once
// complete and verified; an interrupted one (network error, ctx cancelled)
// leaves that file, and the next call resumes it with a Range request
// (starting over when the server answers 200).
func Download(ctx context.Context, ref Ref, o Options) (string, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return "", err
	}
	if err := ref.check(); err != nil {
		return "", fmt.Errorf("hub: %s: %w: %v", ref, ErrBadURI, err)
	}
	c := newClient(o)
	if ref.File == "" {
		return c.downloadRepo(ctx, ref)
	}
	return c.downloadFile(ctx, ref)
}

// client carries the options of one Download.
type client struct {
	o          Options
	get        *http.Client // follows redirects
	noRedirect *http.Client // returns redirects as they are
	host       string       // the endpoint's host: the only one that gets the token
}

func newClient(o Options) *client {
	nr := *o.Client
	nr.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	u, _ := url.Parse(o.Endpoint)
	return &client{o: o, get: o.Client, noRedirect: &nr, host: u.Host}
}

// downloadFile fetches one file of ref's repository at ref's revision.
func (c *client) downloadFile(ctx context.Context, ref Ref) (string, error) {
	rc := newRepoCache(c.o.CacheDir, ref)
	if p, ok := rc.cachedFile(ref.revision(), ref.File); ok {
		return p, nil
	}
	m, err := c.metadata(ctx, ref)
	if err != nil {
		return "", err
	}
	blob := rc.blob(blobName(m.etag))
	if !exists(blob) {
		if err := c.fetch(ctx, ref, m, blob); err != nil {
			return "", err
		}
	}
	p, err := rc.link(m.commit, ref.File, blobName(m.etag))
	if err == nil {
		err = rc.writeRef(ref.revision(), m.commit)
	}
	if err != nil {
		return "", fmt.Errorf("hub: %s: cache: %w", ref, err)
	}
	return p, nil
}

// fileMeta is what the resolve answer says about a file.
type fileMeta struct {
	commit   string // X-Repo-Commit, else the revision asked for
	etag     string // X-Linked-Etag, else ETag, unquoted
	sha256   string // etag when it is a sha256 (LFS files), else ""
	size     int64  // X-Linked-Size, else Content-Length; -1 when unknown
	location string // where to GET the bytes
}

var (
	sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)
	commitHex = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// resolveURL is {endpoint}/{owner}/{repo}/resolve/{revision}/{file}.
func (c *client) resolveURL(ref Ref) string {
	segs := strings.Split(ref.File, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.o.Endpoint + "/" + ref.RepoID() + "/resolve/" + url.PathEscape(ref.revision()) + "/" + strings.Join(segs, "/")
}

// metadata asks the resolve URL with HEAD, following relative redirects only
// (a renamed repository), and reads the etag, size, commit and the location
// of the bytes from the answer, as huggingface_hub does.
func (c *client) metadata(ctx context.Context, ref Ref) (fileMeta, error) {
	u := c.resolveURL(ref)
	for range 10 {
		req, err := c.newRequest(ctx, http.MethodHead, u)
		if err != nil {
			return fileMeta{}, fmt.Errorf("hub: %s: %w", ref, err)
		}
		resp, err := c.noRedirect.Do(req)
		if err != nil {
			return fileMeta{}, netError(ctx, ref, req.URL.Host, err)
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
			next, err := req.URL.Parse(loc)
			if err != nil {
				return fileMeta{}, fmt.Errorf("hub: %s: bad redirect %q", ref, loc)
			}
			if l, _ := url.Parse(loc); l != nil && l.Host == "" {
				u = next.String()
				continue
			}
			return c.readMeta(ref, resp, next.String())
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fileMeta{}, c.statusError(ref, resp)
		}
		return c.readMeta(ref, resp, u)
	}
	return fileMeta{}, fmt.Errorf("hub: %s: too many redirects", ref)
}

func (c *client) readMeta(ref Ref, resp *http.Response, location string) (fileMeta, error) {
	m := fileMeta{commit: resp.Header.Get("X-Repo-Commit"), location: location, size: -1}
	if !commitHex.MatchString(m.commit) {
		m.commit = ref.revision()
	}
	m.etag = unquoteETag(resp.Header.Get("X-Linked-Etag"))
	if m.etag == "" {
		m.etag = unquoteETag(resp.Header.Get("ETag"))
	}
	if m.etag == "" {
		return fileMeta{}, fmt.Errorf("hub: %s: %s sent no ETag; is %s a Hugging Face hub?", ref, resp.Request.URL.Host, c.o.Endpoint)
	}
	if s := strings.ToLower(m.etag); sha256Hex.MatchString(s) {
		m.sha256 = s
	}
	size := resp.Header.Get("X-Linked-Size")
	if size == "" && resp.StatusCode < 300 {
		size = resp.Header.Get("Content-Length")
	}
	if n, err := strconv.ParseInt(size, 10, 64); err == nil && n >= 0 {
		m.size = n
	}
	return m, nil
}

// newRequest builds a request that asks for the bytes as stored (so sizes
// and ranges mean what they say), with the token when it goes to the
// endpoint's host.
func (c *client) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", "troupe")
	if c.o.Token != "" && req.URL.Host == c.host {
		req.Header.Set("Authorization", "Bearer "+c.o.Token)
	}
	return req, nil
}

func unquoteETag(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	return strings.Trim(s, `"`)
}
