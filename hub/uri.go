package hub

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Scheme prefixes a hub reference: hf://OWNER/REPO[/FILE][@REVISION].
const Scheme = "hf://"

// DefaultRevision is the branch used when a reference names none.
const DefaultRevision = "main"

// Ref names a model repository on the hub, or one file in it.
type Ref struct {
	Owner string // user or organization, e.g. "ggml-org"
	Repo  string // repository name, e.g. "gemma-3-1b-it-GGUF"
	// File is the path of one file inside the repository, "/"-separated; ""
	// names the whole repository (a safetensors directory).
	File string
	// Revision is a branch, tag or commit; "" means DefaultRevision.
	Revision string
}

// ParseURI parses hf://OWNER/REPO[/PATH/TO/FILE][@REVISION]. The revision may
// also follow the repository, as huggingface_hub's file system writes it:
// hf://OWNER/REPO@REVISION[/FILE], percent-encoding a "/" in it
// (refs%2Fpr%2F1). A trailing @REVISION after the file is taken from the last
// "@", so it may contain "/" (hf://o/r/model.gguf@refs/pr/1). The returned
// Ref always has a Revision.
func ParseURI(s string) (Ref, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Ref{}, badURI(s, "want "+Scheme+"OWNER/REPO[/FILE][@REVISION]")
	}
	owner, rest, _ := strings.Cut(rest, "/")
	repo, rest, _ := strings.Cut(rest, "/")
	var r Ref
	if name, rev, ok := strings.Cut(repo, "@"); ok {
		r = Ref{Owner: owner, Repo: name, File: rest, Revision: rev}
	} else {
		r = Ref{Owner: owner, Repo: repo, File: rest}
		if i := strings.LastIndexByte(rest, '@'); i >= 0 {
			r.File, r.Revision = rest[:i], rest[i+1:]
			if r.Revision == "" {
				return Ref{}, badURI(s, "empty revision after @")
			}
		}
	}
	if r.Revision == "" && strings.Contains(repo, "@") {
		return Ref{}, badURI(s, "empty revision after @")
	}
	if rev, err := url.PathUnescape(r.Revision); err == nil {
		r.Revision = rev
	}
	if r.Revision == "" {
		r.Revision = DefaultRevision
	}
	r.File = strings.TrimSuffix(r.File, "/")
	if owner == "datasets" || owner == "spaces" {
		return Ref{}, badURI(s, "only model repositories can be served")
	}
	if owner == "" || repo == "" {
		return Ref{}, badURI(s, "want "+Scheme+"OWNER/REPO[/FILE][@REVISION]")
	}
	if err := r.check(); err != nil {
		return Ref{}, badURI(s, err.Error())
	}
	return r, nil
}

// String returns the reference in ParseURI's syntax, leaving out the default
// revision.
func (r Ref) String() string {
	s := Scheme + r.Owner + "/" + r.Repo
	if r.File != "" {
		s += "/" + r.File
	}
	if rev := r.revision(); rev != DefaultRevision {
		s += "@" + rev
	}
	return s
}

// RepoID returns "OWNER/REPO".
func (r Ref) RepoID() string { return r.Owner + "/" + r.Repo }

func (r Ref) revision() string {
	if r.Revision == "" {
		return DefaultRevision
	}
	return r.Revision
}

// repoName is the hub's rule for owner and repository names; the hub also
// forbids "--" and "..", which would make the cache directory ambiguous.
var repoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)

// check validates the parts of r, so that no part can escape the cache
// directory when used in a path.
func (r Ref) check() error {
	for _, p := range []struct{ what, s string }{{"owner", r.Owner}, {"repository", r.Repo}} {
		if !repoName.MatchString(p.s) || strings.Contains(p.s, "--") || strings.Contains(p.s, "..") {
			return fmt.Errorf("%s name %q: use letters, digits, '-', '_' and '.'", p.what, p.s)
		}
	}
	if r.File != "" {
		if err := checkPath(r.File); err != nil {
			return fmt.Errorf("file path %q: %v", r.File, err)
		}
	}
	if rev := r.revision(); strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") ||
		strings.ContainsAny(rev, "\\\x00 \t\n") || hasDotSegment(rev) {
		return fmt.Errorf("revision %q is not a branch, tag or commit", rev)
	}
	return nil
}

// checkPath accepts a relative "/"-separated path with no empty, "." or ".."
// segment.
func checkPath(p string) error {
	if strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00\n") {
		return fmt.Errorf("not a relative path")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("empty, '.' or '..' segment")
		}
	}
	return nil
}

func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

func badURI(s, why string) error {
	return fmt.Errorf("hub: %q: %w: %s", s, ErrBadURI, why)
}
