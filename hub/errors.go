package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Sentinel errors, compared with errors.Is. Every error from this package is
// one line, fit for a CLI to print as it is.
var (
	// ErrBadURI: the reference is not hf://OWNER/REPO[/FILE][@REVISION].
	ErrBadURI = errors.New("bad hf:// URI")
	// ErrNotFound: no such repository, revision or file (HTTP 404, or the
	// hub's 401 for a repository it does not show without a token).
	ErrNotFound = errors.New("not found")
	// ErrAccess: the repository is gated or private and the request carried
	// no token, a rejected one, or one without access (HTTP 401, 403).
	ErrAccess = errors.New("access denied")
	// ErrChecksum: the downloaded bytes do not match the announced sha256 or
	// size; the partial file has been deleted.
	ErrChecksum = errors.New("checksum mismatch")
)

// statusError turns a failed hub answer into an error naming what is wrong.
// The hub says which in X-Error-Code (RepoNotFound, RevisionNotFound,
// EntryNotFound, GatedRepo) and X-Error-Message.
func (c *client) statusError(ref Ref, resp *http.Response) error {
	code := resp.Header.Get("X-Error-Code")
	msg := oneLine(resp.Header.Get("X-Error-Message"))
	repo, page := ref.RepoID(), c.o.Endpoint+"/"+ref.RepoID()
	token := "set HF_TOKEN to a token with access"
	if c.o.Token != "" {
		token = "the token sent has no access to it"
	}
	var err error
	switch {
	case code == "RepoNotFound":
		err = fmt.Errorf("%w: repository %s does not exist or is private (%s)", ErrNotFound, repo, token)
	case code == "RevisionNotFound":
		err = fmt.Errorf("%w: repository %s has no revision %q", ErrNotFound, repo, ref.revision())
	case code == "EntryNotFound" || (resp.StatusCode == http.StatusNotFound && ref.File != ""):
		err = fmt.Errorf("%w: repository %s has no file %q at revision %q", ErrNotFound, repo, ref.File, ref.revision())
	case resp.StatusCode == http.StatusNotFound:
		err = fmt.Errorf("%w: repository %s or its revision %q", ErrNotFound, repo, ref.revision())
	case code == "GatedRepo" && resp.StatusCode == http.StatusForbidden:
		err = fmt.Errorf("%w (403): %s is gated and the token's account has not been granted access: request it at %s", ErrAccess, repo, page)
	case code == "GatedRepo":
		err = fmt.Errorf("%w (%d): %s is gated: accept its terms at %s and %s", ErrAccess, resp.StatusCode, repo, page, token)
	case resp.StatusCode == http.StatusUnauthorized && c.o.Token != "":
		err = fmt.Errorf("%w (401): the token was rejected (check HF_TOKEN)", ErrAccess)
	case resp.StatusCode == http.StatusUnauthorized:
		err = fmt.Errorf("%w (401): %s needs a token: set HF_TOKEN", ErrAccess, repo)
	case resp.StatusCode == http.StatusForbidden:
		err = fmt.Errorf("%w (403): the token has no permission to read %s", ErrAccess, repo)
	default:
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return fmt.Errorf("hub: %s: HTTP %d from %s: %s", ref, resp.StatusCode, resp.Request.URL.Host, msg)
	}
	return fmt.Errorf("hub: %s: %w", ref, err)
}

// netError reports a request that got no answer: the context's error when it
// was cancelled, else the network failure without url.Error's repetition of
// the URL.
func netError(ctx context.Context, ref Ref, host string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("hub: %s: %w", ref, context.Cause(ctx))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("hub: %s: cannot reach %s: %w", ref, host, err)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
