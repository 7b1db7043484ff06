package main

import (
	"context"
	"fmt"
	"io"
	"path"
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

// autoProjector sets c.MMProj to the hub model's repository projector
// (hubProjector) when neither --mmproj nor --no-mmproj is given, saying so
// in one line.
func (c *serveConfig) autoProjector(ctx context.Context, stderr io.Writer) error {
	if c.MMProj != "" || c.NoMMProj || !strings.HasPrefix(c.Model, "hf://") {
		return nil
	}
	p, err := hubProjector(ctx, c.Model, c.CacheDir, stderr)
	if err != nil || p == "" {
		return err
	}
	fmt.Fprintf(stderr, "troupe: loading the repository's projector %s: the model takes images (--no-mmproj: text only)\n", path.Base(p))
	c.MMProj = p
	return nil
}
