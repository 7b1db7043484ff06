package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/hub"
	"github.com/troupe-llm/troupe/hub/hubtest"
	"github.com/troupe-llm/troupe/server"
)

// useHub makes c pull from h into a new cache, as serve wires hub.Download
// and hub.ListFiles.
func useHub(t *testing.T, c *server.ManagerConfig, h *hubtest.Server) {
	o := hub.Options{Endpoint: h.URL, CacheDir: t.TempDir()}
	c.Pull = func(ctx context.Context, uri string, progress func(completed, total int64)) (string, error) {
		ref, err := hub.ParseURI(uri)
		if err != nil {
			return "", err
		}
		o := o
		o.OnProgress = func(_ string, completed, total int64) { progress(completed, total) }
		return hub.Download(ctx, ref, o)
	}
	c.ListRepo = func(ctx context.Context, uri string) ([]string, error) {
		ref, err := hub.ParseURI(uri)
		if err != nil {
			return nil, err
		}
		return hub.ListFiles(ctx, ref, o)
	}
}

// pullLine is one NDJSON line of /api/pull.
type pullLine struct {
	Status, Digest, Error string
	Total, Completed      int64
}

// pullStream posts a streamed /api/pull of name and returns its lines.
func pullStream(t *testing.T, url, name string) []pullLine {
	t.Helper()
	resp, err := http.Post(url+"/api/pull", "application/json", strings.NewReader(`{"model":"`+name+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []pullLine
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l pullLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("not NDJSON: %q", sc.Text())
		}
		lines = append(lines, l)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("pull %s: %d %s", name, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return lines
}

// TestManagerPullTag: hf.co/OWNER/REPO:QUANT picks the repository's file of
// that quant (any case; no tag: Q4_K_M) and streams its bytes as Ollama
// does, several "pulling FILE" lines of growing completed up to the total,
// the model is then listed under the
// name pulled and served. A repository without GGUF files, an unknown quant
// and a missing repository are 400s that say so.
func TestManagerPullTag(t *testing.T) {
	q4 := modelBytes(t, "stories260K.gguf")
	q8 := modelBytes(t, "TinyStories-656K-Q8_0.gguf")
	h := hubtest.New(t,
		hubtest.Repo{ID: "acme/stories-GGUF", Files: []hubtest.File{
			{Name: "README.md", Data: []byte("# stories\n")},
			{Name: "stories-Q4_K_M.gguf", Data: q4, LFS: true},
			{Name: "stories-Q8_0.gguf", Data: q8, LFS: true},
		}},
		hubtest.Repo{ID: "acme/stories", Files: []hubtest.File{
			{Name: "config.json", Data: []byte("{}")},
			{Name: "model.safetensors", Data: []byte("weights"), LFS: true},
		}})
	f := newManaged(t, func(c *server.ManagerConfig) { useHub(t, c, h) })

	for _, tc := range []struct {
		name, file string
		data       []byte
	}{
		{"hf.co/acme/stories-GGUF:q8_0", "stories-Q8_0.gguf", q8},
		{"huggingface.co/acme/stories-GGUF", "stories-Q4_K_M.gguf", q4},
	} {
		lines := pullStream(t, f.url, tc.name)
		var statuses []string
		var progress []pullLine
		for _, l := range lines {
			if l.Error != "" {
				t.Fatalf("pull %s: %s", tc.name, l.Error)
			}
			statuses = append(statuses, l.Status)
			if l.Total != 0 {
				progress = append(progress, l)
			}
		}
		if statuses[0] != "pulling manifest" || strings.Contains(strings.Join(statuses, "\n"), "projector") ||
			strings.Join(statuses[len(statuses)-3:], ", ") != "verifying sha256 digest, writing manifest, success" {
			t.Errorf("pull %s: statuses %q", tc.name, statuses)
		}
		// The hub reports every ProgressStep bytes; the reads are at most
		// 32 KiB, so a file of N bytes gives N/(step+32 KiB) lines at least.
		size := int64(len(tc.data))
		if min := size / (hub.ProgressStep(size) + 32<<10); len(progress) < 3 || int64(len(progress)) < min {
			t.Errorf("pull %s: %d progress lines, want %d at least", tc.name, len(progress), max(min, 3))
		}
		t.Logf("pull %s: %d progress lines for %d bytes", tc.name, len(progress), size)
		for i, p := range progress {
			if p.Status != "pulling "+tc.file || p.Digest != tc.file || p.Total != size || i > 0 && p.Completed <= progress[i-1].Completed {
				t.Errorf("pull %s: progress line %d %+v (before it %+v), want pulling %s with growing counts of %d bytes", tc.name, i, p, progress[max(i-1, 0)], tc.file, size)
			}
		}
		if len(progress) > 0 && progress[len(progress)-1].Completed != size {
			t.Errorf("pull %s: last progress %+v, want %d bytes", tc.name, progress[len(progress)-1], size)
		}
		if code, out := f.complete(t, tc.name, ""); code != 200 {
			t.Errorf("the pulled model %s: %d %s", tc.name, code, out)
		}
	}
	_, b := get(t, f.url+"/api/tags")
	if !strings.Contains(string(b), `"hf.co/acme/stories-GGUF:q8_0"`) || !strings.Contains(string(b), `"huggingface.co/acme/stories-GGUF:latest"`) {
		t.Errorf("/api/tags after the pulls: %s", b)
	}
	checkPullRefused(t, f.url, map[string]string{
		`{"model":"hf.co/acme/stories-GGUF:Q2_K","stream":false}`:      "acme/stories-GGUF has no Q2_K file; its quants: Q4_K_M, Q8_0",
		`{"model":"hf.co/acme/stories:Q4_K_M","stream":false}`:         "acme/stories has no GGUF file",
		`{"model":"hf.co/acme/stories","stream":false}`:                "acme/stories has no GGUF file",
		`{"model":"hf.co/acme/missing","stream":false}`:                "acme/missing",
		`{"model":"hf.co/acme/stories-GGUF/README.md","stream":false}`: "README.md is not a .gguf file",
		`{"model":"hf.co/acme","stream":false}`:                        "want hf.co/OWNER/REPO[:QUANT]",
	})
	if lines := pullStream(t, f.url, "hf.co/acme/stories-GGUF:Q2_K"); !strings.Contains(lines[len(lines)-1].Error, "its quants: Q4_K_M, Q8_0") {
		t.Errorf("streamed unknown quant: %+v", lines)
	}
}
