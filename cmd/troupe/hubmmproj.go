package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/hub"
	"github.com/troupe-llm/troupe/server"
)

// noMMProjVar defines --no-mmproj (llama-server's): a hub model's
// repository projector is not fetched, the model runs text only.
func noMMProjVar(fs interface {
	BoolVar(p *bool, name string, value bool, usage string)
}, p *bool) {
	fs.BoolVar(p, "no-mmproj", false, "do not fetch and load the projector (mmproj GGUF) of a hub model's repository, or of a --models-dir subdirectory: the model runs text only")
}

// hubProjector finds the projector of a hub model, as llama-server's -hf
// does: when spec is hf://OWNER/REPO/FILE.gguf and the repository holds an
// mmproj GGUF (several: the F16 one, else the first by name), it is
// downloaded and its local path returned; "" for a local model, a
// safetensors repository, a repository without one, or one that cannot be
// listed (offline: the model may be in the cache; a line says so).
func hubProjector(ctx context.Context, spec, cacheDir string, progress io.Writer) (string, error) {
	if !strings.HasPrefix(spec, "hf://") {
		return "", nil
	}
	ref, err := hub.ParseURI(spec)
	if err != nil || !strings.HasSuffix(strings.ToLower(ref.File), ".gguf") || strings.Contains(strings.ToLower(path.Base(ref.File)), "mmproj") {
		return "", nil // resolveModel says what is wrong with spec
	}
	o := hub.Options{CacheDir: cacheDir, Progress: progress}
	listCtx, cancel := context.WithTimeout(ctx, 30*time.Second) // a black-holed network must not hold the start
	files, err := hub.ListFiles(listCtx, ref, o)
	cancel()
	if err != nil { // offline with the model cached, say: served text only, as before
		fmt.Fprintf(progress, "troupe: %s/%s is not listed (%v): its projector, if any, is not loaded (text only)\n", ref.Owner, ref.Repo, err)
		return "", nil
	}
	p := server.ChooseProjector(files)
	if p == "" {
		return "", nil
	}
	ref.File = p
	local, err := hub.Download(ctx, ref, o)
	if err != nil {
		return "", fmt.Errorf("the projector %s (--no-mmproj: text only): %w", p, err)
	}
	return local, nil
}

// autoProjector sets *mmproj to the hub model's repository projector
// (hubProjector) when neither --mmproj nor --no-mmproj is given, saying so
// in one line: serve's -m and troupe run's model.
func autoProjector(ctx context.Context, model, cacheDir string, mmproj *string, noMMProj bool, stderr io.Writer) error {
	if *mmproj != "" || noMMProj || !strings.HasPrefix(model, "hf://") {
		return nil
	}
	p, err := hubProjector(ctx, model, cacheDir, stderr)
	if err != nil || p == "" {
		return err
	}
	fmt.Fprintf(stderr, "troupe: loading the repository's projector %s: the model takes images (--no-mmproj: text only)\n", path.Base(p))
	*mmproj = p
	return nil
}

// hubModelURI turns an Ollama-style hub name (hf.co/OWNER/REPO[:QUANT],
// hf.co/OWNER/REPO/FILE.gguf; huggingface.co/ or https:// before them, or
// hf://OWNER/REPO:QUANT) into the hf:// URI of its GGUF file, choosing the
// file by quant as /api/pull does (server.HubURIs: no tag is Q4_K_M, else
// the nearest quant the repository has); a path or another hf:// URI is
// returned as it is. The choice is said in one line on stderr; a name that
// does not resolve (no such quant: the error lists those there are) is a
// usageError.
func hubModelURI(ctx context.Context, spec, cacheDir string, stderr io.Writer) (string, error) {
	if !isHubName(spec) {
		return spec, nil
	}
	var listErr error // the hub's or the network's; the other errors are the name's (exit 2)
	list := func(ctx context.Context, uri string) ([]string, error) {
		files, err := listRepo(cacheDir)(ctx, uri)
		listErr = err
		if cached := cachedRepo(uri, cacheDir, err); len(cached) > 0 {
			fmt.Fprintf(stderr, "troupe: %v: choosing among the cached files\n", err)
			return cached, nil
		}
		return files, err
	}
	listCtx, cancel := context.WithTimeout(ctx, 30*time.Second)               // HubURIs only lists: as hubProjector's bound
	uri, file, _, err := server.HubURIs(listCtx, spec, list, func(string) {}) // the projector: autoProjector
	cancel()
	switch {
	case err != nil && listErr == nil:
		return "", usageError{fmt.Sprintf("%s: %v", spec, err)}
	case err != nil:
		return "", fmt.Errorf("%s: %w", spec, err)
	}
	fmt.Fprintf(stderr, "troupe: %s is %s\n", spec, file)
	return uri, nil
}

// cachedRepo lists the cached files of uri's repository when listing it
// failed for want of an answer (err neither nil nor the hub's refusal:
// not found, access denied): a model pulled before runs offline, as
// Ollama's do. Nothing cached, or another error: nil.
func cachedRepo(uri, cacheDir string, err error) []string {
	if err == nil || errors.Is(err, hub.ErrNotFound) || errors.Is(err, hub.ErrAccess) || errors.Is(err, hub.ErrBadURI) {
		return nil
	}
	ref, perr := hub.ParseURI(uri)
	if perr != nil {
		return nil
	}
	files, _ := hub.CachedFiles(ref, hub.Options{CacheDir: cacheDir})
	return files
}

// isHubName reports whether spec is a name for hubModelURI: not a file or
// directory there is, nor an hf:// URI without a quant.
func isHubName(spec string) bool {
	if _, err := os.Stat(spec); err == nil {
		return false
	}
	if rest, ok := strings.CutPrefix(spec, hub.Scheme); ok {
		return strings.Contains(rest, ":")
	}
	return slices.ContainsFunc([]string{"hf.co/", "huggingface.co/", "https://hf.co/", "https://huggingface.co/"},
		func(p string) bool { return strings.HasPrefix(spec, p) })
}
