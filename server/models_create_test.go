package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/server"
)

// TestManagerCreatePaths: /api/create reads a GGUF path only inside
// --models-dir (relative paths are the directory's), or a file given with
// -m; a path out of it by "..", by a linked directory, or any other file of
// the machine is a 400 naming from (adapters alike, naming adapters).
func TestManagerCreatePaths(t *testing.T) {
	outside := t.TempDir()
	evil := filepath.Join(outside, "evil.gguf")
	if err := os.WriteFile(evil, []byte("GGUF not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	given := filepath.Join(outside, "given.gguf")
	linkStories(t, given)
	f := newManaged(t, func(c *server.ManagerConfig) {
		c.Models = []server.ModelSource{{Name: "given", Path: given}}
		if err := os.Symlink(outside, filepath.Join(c.Dir, "sub")); err != nil {
			t.Fatal(err)
		}
	})
	for i, from := range []string{"small.gguf", filepath.Join(f.dir, "tiny.gguf"), given} {
		resp, b := post(t, f.url+"/api/create", `{"model":"ok`+string(rune('a'+i))+`","from":"`+from+`","stream":false}`)
		if resp.StatusCode != 200 {
			t.Errorf("from %s: %d %s", from, resp.StatusCode, b)
		}
	}
	f.answers["oka"] = "oka"
	if code, _ := f.complete(t, "oka", ""); code != 200 {
		t.Errorf("the model made from small.gguf: %d", code)
	}
	for _, from := range []string{evil, "../" + filepath.Base(outside) + "/evil.gguf", "sub/evil.gguf", "sub/../sub/evil.gguf",
		filepath.Join(f.dir, "..", filepath.Base(outside), "evil.gguf"), "/etc/passwd", "/proc/self/environ"} {
		resp, b := post(t, f.url+"/api/create", `{"model":"bad","from":"`+from+`","stream":false}`)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "from") || !strings.Contains(string(b), "--models-dir") {
			t.Errorf("from %s: %d %s, want a 400 naming from", from, resp.StatusCode, b)
		}
	}
	resp, b := post(t, f.url+"/api/create", `{"model":"bad","modelfile":"FROM small\nADAPTER `+evil+`\n","stream":false}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "adapter") {
		t.Errorf("an adapter outside the directory: %d %s", resp.StatusCode, b)
	}
	_, b = get(t, f.url+"/api/tags")
	if strings.Contains(string(b), `"bad`) {
		t.Errorf("a refused create is listed: %s", b)
	}
}
