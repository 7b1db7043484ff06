package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const (
	configFile = "config.json"
	indexFile  = "model.safetensors.index.json"
	singleFile = "model.safetensors"
)

// optionalFiles are fetched with a safetensors directory when the repository
// has them.
var optionalFiles = []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja"}

// repoInfo is the part of GET /api/models/{owner}/{repo}/revision/{revision}
// this package reads.
type repoInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
	} `json:"siblings"`
}

// downloadRepo fetches the files of a safetensors directory at one commit
// and returns the snapshot directory holding them.
func (c *client) downloadRepo(ctx context.Context, ref Ref) (string, error) {
	rc := newRepoCache(c.o.CacheDir, ref)
	if dir, ok := rc.cachedDir(ref.revision()); ok {
		return dir, nil
	}
	info, err := c.repoInfo(ctx, ref)
	if err != nil {
		return "", err
	}
	commit := info.SHA
	if !commitHex.MatchString(commit) {
		commit = ref.revision()
	}
	at := func(file string) Ref { return Ref{Owner: ref.Owner, Repo: ref.Repo, File: file, Revision: commit} }

	have := map[string]bool{}
	for _, s := range info.Siblings {
		have[s.RFilename] = true
	}
	if !have[configFile] {
		return "", fmt.Errorf("hub: %s: %w: %s has no %s at its root, so it is not a safetensors model directory; name a file: %s/FILE.gguf",
			ref, ErrNotFound, ref.RepoID(), configFile, Scheme+ref.RepoID())
	}
	files := []string{configFile}
	for _, f := range optionalFiles {
		if have[f] {
			files = append(files, f)
		}
	}
	var weights []string
	switch {
	case have[indexFile]:
		p, err := c.downloadFile(ctx, at(indexFile))
		if err != nil {
			return "", err
		}
		if weights, err = readShards(p); err != nil {
			return "", fmt.Errorf("hub: %s: %s: %w", ref, indexFile, err)
		}
		files = append(files, indexFile)
	case have[singleFile]:
		weights = []string{singleFile}
	default:
		for name := range have {
			if !strings.Contains(name, "/") && strings.HasSuffix(name, ".safetensors") {
				weights = append(weights, name)
			}
		}
		slices.Sort(weights)
	}
	if len(weights) == 0 {
		return "", fmt.Errorf("hub: %s: %w: %s has no .safetensors weights at its root; name a file: %s/FILE.gguf",
			ref, ErrNotFound, ref.RepoID(), Scheme+ref.RepoID())
	}
	files = append(files, weights...)

	for _, f := range files {
		if _, err := c.downloadFile(ctx, at(f)); err != nil {
			return "", err
		}
	}
	err = rc.writeManifest(commit, files)
	if err == nil {
		err = rc.writeRef(ref.revision(), commit)
	}
	if err != nil {
		return "", fmt.Errorf("hub: %s: cache: %w", ref, err)
	}
	return rc.snapshotDir(commit), nil
}

// repoInfo lists the repository's files at ref's revision.
func (c *client) repoInfo(ctx context.Context, ref Ref) (*repoInfo, error) {
	u := c.o.Endpoint + "/api/models/" + ref.RepoID() + "/revision/" + url.PathEscape(ref.revision())
	req, err := c.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return nil, fmt.Errorf("hub: %s: %w", ref, err)
	}
	resp, err := c.get.Do(req)
	if err != nil {
		return nil, netError(ctx, ref, req.URL.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.statusError(ref, resp)
	}
	var info repoInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&info); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("hub: %s: %w", ref, context.Cause(ctx))
		}
		return nil, fmt.Errorf("hub: %s: listing %s: %w", ref, ref.RepoID(), err)
	}
	return &info, nil
}

// readShards returns the files named in an index's weight_map, sorted.
func readShards(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, f := range idx.WeightMap {
		if err := checkPath(f); err != nil {
			return nil, fmt.Errorf("shard %q: %v", f, err)
		}
		seen[f] = true
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("empty weight_map")
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// repoOf is ref's repository (File cleared) and o with its defaults, both
// checked: ListFiles' and CachedFiles' start.
func repoOf(ref Ref, o Options) (Ref, Options, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return ref, o, err
	}
	ref.File = ""
	if err := ref.check(); err != nil {
		return ref, o, fmt.Errorf("hub: %s: %w: %v", ref, ErrBadURI, err)
	}
	return ref, o, nil
}

// ListFiles returns the paths of the files in ref's repository at ref's
// revision (ref.File is ignored), sorted, as the hub's
// GET {endpoint}/api/models/{owner}/{repo}/revision/{revision} lists them.
// It always asks the hub: the cache does not keep listings.
func ListFiles(ctx context.Context, ref Ref, o Options) ([]string, error) {
	ref, o, err := repoOf(ref, o)
	if err != nil {
		return nil, err
	}
	info, err := newClient(o).repoInfo(ctx, ref)
	if err != nil {
		return nil, err
	}
	files := make([]string, 0, len(info.Siblings))
	for _, s := range info.Siblings {
		files = append(files, s.RFilename)
	}
	slices.Sort(files)
	return files, nil
}

// CachedFiles returns the files of ref's repository at its revision whose
// content is in o's cache (a file or directory download left them there),
// sorted as ListFiles sorts: what a caller may choose among when the hub
// cannot be reached. None cached: an empty list.
func CachedFiles(ref Ref, o Options) ([]string, error) {
	ref, o, err := repoOf(ref, o)
	if err != nil {
		return nil, err
	}
	rc := newRepoCache(o.CacheDir, ref)
	dir := rc.snapshotDir(rc.commit(ref.revision()))
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // no snapshot, or an unreadable part: nothing cached there
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		if _, ok := rc.cachedFile(ref.revision(), filepath.ToSlash(rel)); ok {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}
