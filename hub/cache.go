package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// repoCache is one repository's directory in the cache (see the layout in
// doc.go).
type repoCache struct {
	dir string // {cache}/models--{owner}--{repo}
}

func newRepoCache(cacheDir string, ref Ref) repoCache {
	return repoCache{dir: filepath.Join(cacheDir, "models--"+ref.Owner+"--"+ref.Repo)}
}

// commit returns the commit revision resolved to when it was last
// downloaded, or revision itself (a commit, or a snapshot named after the
// revision because the server sent no commit).
func (c repoCache) commit(revision string) string {
	b, err := os.ReadFile(filepath.Join(c.dir, "refs", filepath.FromSlash(revision)))
	if s := strings.TrimSpace(string(b)); err == nil && safeName.MatchString(s) {
		return s
	}
	return revision
}

// writeRef records that revision resolved to commit.
func (c repoCache) writeRef(revision, commit string) error {
	if revision == commit {
		return nil
	}
	return writeFileAtomic(filepath.Join(c.dir, "refs", filepath.FromSlash(revision)), []byte(commit))
}

func (c repoCache) snapshotDir(commit string) string {
	return filepath.Join(c.dir, "snapshots", filepath.FromSlash(commit))
}

func (c repoCache) snapshotFile(commit, file string) string {
	return filepath.Join(c.snapshotDir(commit), filepath.FromSlash(file))
}

func (c repoCache) blob(etag string) string {
	return filepath.Join(c.dir, "blobs", etag)
}

// cachedFile returns the snapshot path of file at revision when its content
// is in the cache.
func (c repoCache) cachedFile(revision, file string) (string, bool) {
	p := c.snapshotFile(c.commit(revision), file)
	st, err := os.Stat(p) // follows the link: a link to a missing blob is not cached
	return p, err == nil && st.Mode().IsRegular()
}

// link makes snapshots/{commit}/{file} point at blobs/{etag}: a relative
// symlink as huggingface_hub makes, or a hard link where symlinks fail.
func (c repoCache) link(commit, file, etag string) (string, error) {
	p, blob := c.snapshotFile(commit, file), c.blob(etag)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", p, os.Getpid())
	os.Remove(tmp)
	target, err := filepath.Rel(filepath.Dir(p), blob)
	if err == nil {
		err = os.Symlink(target, tmp)
	}
	if err != nil {
		if err = os.Link(blob, tmp); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return p, nil
}

// manifest lists the files of a completed directory download.
type manifest struct {
	Files []string `json:"files"`
}

func (c repoCache) manifestPath(commit string) string {
	return filepath.Join(c.dir, ".troupe", filepath.FromSlash(commit)+".json")
}

// cachedDir returns the snapshot directory of revision when a directory
// download of it completed and all its files are still there.
func (c repoCache) cachedDir(revision string) (string, bool) {
	commit := c.commit(revision)
	b, err := os.ReadFile(c.manifestPath(commit))
	var m manifest
	if err != nil || json.Unmarshal(b, &m) != nil || len(m.Files) == 0 {
		return "", false
	}
	for _, f := range m.Files {
		if checkPath(f) != nil {
			return "", false
		}
		if _, ok := c.cachedFile(commit, f); !ok {
			return "", false
		}
	}
	return c.snapshotDir(commit), true
}

func (c repoCache) writeManifest(commit string, files []string) error {
	b, err := json.Marshal(manifest{Files: files})
	if err != nil {
		return err
	}
	return writeFileAtomic(c.manifestPath(commit), b)
}

// safeName is what may name a blob or snapshot directory as it is: git
// object ids and sha256 digests, and other tame names.
var safeName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// blobName is the cache name for a file with this etag: the etag itself
// when it is a tame name, else its sha256.
func blobName(etag string) string {
	if safeName.MatchString(etag) && !strings.HasSuffix(etag, ".incomplete") && etag != "." && etag != ".." {
		return etag
	}
	sum := sha256.Sum256([]byte(etag))
	return hex.EncodeToString(sum[:])
}

// exists reports whether path names a regular file (after links).
func exists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// writeFileAtomic writes b to path through a temporary file and a rename.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
