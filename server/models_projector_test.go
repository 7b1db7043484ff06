package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/hub/hubtest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/server"
)

// synthProjectorFile writes a random gemma3-tiny projector for
// stories260K's width to dir/name and returns its path.
func synthProjectorFile(t *testing.T, dir, name string) string {
	t.Helper()
	return synthtest.ProjectorFile(t, filepath.Join(dir, name), "gemma3-tiny", stories260KDim, 5)
}

// imageChat posts a chat with one image to model name; it returns the
// status and body.
func imageChat(t *testing.T, url, name string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": name, "max_tokens": 4, "temperature": 0, "messages": []map[string]any{{
		"role": "user", "content": []map[string]any{
			{"type": "image_url", "image_url": map[string]any{"url": dataURL("image/png", pngBytes(t, 40, 24))}},
			{"type": "text", "text": "What is it?"},
		}}}})
	resp, b := post(t, url+"/v1/chat/completions", string(body))
	return resp.StatusCode, string(b)
}

// capabilities are /v1/models' capabilities of model name.
func capabilities(t *testing.T, url, name string) []string {
	t.Helper()
	_, b := get(t, url+"/v1/models")
	var list struct {
		Data []struct {
			ID           string
			Capabilities []string
		}
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("/v1/models: %s", b)
	}
	for _, m := range list.Data {
		if m.ID == name {
			return m.Capabilities
		}
	}
	t.Fatalf("/v1/models does not list %s: %s", name, b)
	return nil
}

// TestManagerPullProjector: pulling a repository that holds a model and
// projectors fetches the model and the F16 projector (progress lines for
// both), and the pulled model takes images (/v1/models says vision);
// /api/delete forgets both.
func TestManagerPullProjector(t *testing.T) {
	model := modelBytes(t, "stories260K.gguf")
	proj, err := os.ReadFile(synthProjectorFile(t, t.TempDir(), "p.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.New(t, hubtest.Repo{ID: "acme/seeing-GGUF", Files: []hubtest.File{
		{Name: "seeing-Q4_K_M.gguf", Data: model, LFS: true},
		{Name: "mmproj-seeing-BF16.gguf", Data: []byte("not this one"), LFS: true},
		{Name: "mmproj-seeing-F16.gguf", Data: proj, LFS: true},
	}})
	f := newManaged(t, func(c *server.ManagerConfig) { useHub(t, c, h) })
	for i, name := range []string{"hf.co/acme/seeing-GGUF", "hf.co/acme/seeing-GGUF/seeing-Q4_K_M.gguf"} {
		lines := pullStream(t, f.url, name)
		var statuses, files []string
		for _, l := range lines {
			if l.Error != "" {
				t.Fatalf("pull %s: %s", name, l.Error)
			}
			statuses = append(statuses, l.Status)
			if l.Total != 0 && !slices.Contains(files, l.Digest) {
				files = append(files, l.Digest)
			}
		}
		if !strings.Contains(strings.Join(statuses, "\n"), "pulling mmproj-seeing-F16.gguf too") ||
			i == 0 && !slices.Equal(files, []string{"seeing-Q4_K_M.gguf", "mmproj-seeing-F16.gguf"}) { // then both are in the cache: no bytes to report
			t.Errorf("pull %s: statuses %q, progress for %q", name, statuses, files)
		}
		if code, out := imageChat(t, f.url, name); code != http.StatusOK {
			t.Errorf("the pulled %s with an image: %d %s", name, code, out)
		}
		if caps := capabilities(t, f.url, name); !slices.Contains(caps, "vision") {
			t.Errorf("%s: capabilities %q, want vision", name, caps)
		}
		if resp, b := post(t, f.url+"/api/show", `{"model":"`+name+`"}`); resp.StatusCode != 200 || !strings.Contains(string(b), `"vision"`) {
			t.Errorf("/api/show %s: %d %s", name, resp.StatusCode, b)
		}
	}
	for _, tr := range h.Requests() {
		if strings.Contains(tr.Path, "BF16") {
			t.Errorf("the BF16 projector was fetched: %+v", tr)
		}
	}
	name := "hf.co/acme/seeing-GGUF"
	req, _ := http.NewRequest(http.MethodDelete, f.url+"/api/delete", strings.NewReader(`{"model":"`+name+`"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	index, err := os.ReadFile(filepath.Join(f.dir, server.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(index), `"`+name+`"`) || strings.Count(string(index), "mmproj-seeing-F16") != 1 {
		t.Errorf("the index after deleting %s (the file form stays): %s", name, index)
	}
}

// TestManagerSubdirProjector: a --models-dir subdirectory holding a model
// and mmproj GGUFs is one model named after it, which takes images
// (/v1/models says vision); with NoProjectors (serve's --no-mmproj) it is
// text only and an image is the usual 400. A subdirectory with two models
// is none.
func TestManagerSubdirProjector(t *testing.T) {
	for _, noProj := range []bool{false, true} {
		f := newManaged(t, func(c *server.ManagerConfig) {
			sub := filepath.Join(c.Dir, "seeing")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			linkStories(t, filepath.Join(sub, "stories260K-Q8_0.gguf"))
			synthProjectorFile(t, sub, "mmproj-seeing-f16.gguf")
			if err := os.WriteFile(filepath.Join(sub, "mmproj-seeing-q8_0.gguf"), []byte("not this one"), 0o644); err != nil {
				t.Fatal(err)
			}
			two := filepath.Join(c.Dir, "two")
			if err := os.Mkdir(two, 0o755); err != nil {
				t.Fatal(err)
			}
			linkStories(t, filepath.Join(two, "a.gguf"), filepath.Join(two, "b.gguf"))
			c.NoProjectors = noProj
		})
		code, out := imageChat(t, f.url, "seeing")
		caps := capabilities(t, f.url, "seeing")
		if noProj {
			if code != http.StatusBadRequest || !strings.Contains(out, "takes no images") || slices.Contains(caps, "vision") {
				t.Errorf("--no-mmproj: an image gives %d %s, capabilities %q; want the text model's 400", code, out, caps)
			}
		} else if code != http.StatusOK || !slices.Contains(caps, "vision") {
			t.Errorf("an image: %d %s, capabilities %q", code, out, caps)
		}
		if code, out := f.complete(t, "seeing", ""); code != 200 {
			t.Errorf("text: %d %s", code, out)
		}
		if _, b := get(t, f.url+"/v1/models"); strings.Contains(string(b), `"two"`) {
			t.Errorf("a subdirectory of two models is listed: %s", b)
		}
		if noProj { // deleting it removes its model and projectors' files it named, then the subdirectory once empty
			req, _ := http.NewRequest(http.MethodDelete, f.url+"/api/delete", strings.NewReader(`{"model":"seeing"}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			left, _ := os.ReadDir(filepath.Join(f.dir, "seeing"))
			if resp.StatusCode != 200 || len(left) != 1 || left[0].Name() != "mmproj-seeing-q8_0.gguf" {
				t.Errorf("delete: %d, left %v", resp.StatusCode, left)
			}
		}
	}
}
