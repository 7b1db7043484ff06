package main

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/hub/hubtest"
	"github.com/troupe-llm/troupe/server"
)

// TestServeHubProjector: serve -m hf://OWNER/REPO/FILE.gguf fetches the
// repository's F16 projector too (as llama-server's -hf does) and the
// model takes images; with --no-mmproj it is text only (an image is the
// usual 400); --mmproj with --no-mmproj is a usage error.
func TestServeHubProjector(t *testing.T) {
	stories, projPath, pic := imageFixture(t) // mmproj_test.go
	model, proj, data := readFile(t, stories), readFile(t, projPath), readFile(t, pic)
	h := hubtest.New(t, hubtest.Repo{ID: "acme/seeing-GGUF", Files: []hubtest.File{
		{Name: "stories260K.gguf", Data: model, LFS: true},
		{Name: "mmproj-seeing-Q8_0.gguf", Data: []byte("not this one"), LFS: true},
		{Name: "mmproj-seeing-f16.gguf", Data: proj, LFS: true},
	}})
	t.Setenv("HF_ENDPOINT", h.URL)
	cache := t.TempDir()
	body := `{"max_tokens": 4, "messages": [{"role": "user", "content": [{"type": "text", "text": "Look:"},
		{"type": "image_url", "image_url": {"url": "data:image/png;base64,` + base64.StdEncoding.EncodeToString(data) + `"}}]}]}`
	for _, tc := range []struct {
		args []string
		code int
		body string
	}{
		{nil, 200, `"content"`},
		{[]string{"--no-mmproj"}, 400, "takes no images"},
		{[]string{"-m", "hf.co/acme/seeing-GGUF"}, 200, `"content"`}, // as troupe run takes it: the GGUF chosen by quant
		{[]string{"-hf", "acme/seeing-GGUF"}, 200, `"content"`},      // llama-server's -hf
	} {
		model := []string{"-m", "hf://acme/seeing-GGUF/stories260K.gguf"}
		if slices.Contains(tc.args, "-m") || slices.Contains(tc.args, "-hf") {
			model = nil
		}
		_, url, stop := startServe(t, slices.Concat(model, []string{"--cache-dir", cache, "-c", "256", "-t", "1"}, tc.args)...)
		code, b := post(t, url+"/v1/chat/completions", strings.Replace(body, "{", `{"model": "stories260K", `, 1))
		if code != tc.code || !strings.Contains(string(b), tc.body) {
			t.Errorf("%v: an image gives %d %s, want %d with %s", tc.args, code, b, tc.code, tc.body)
		}
		stop()
	}
	for _, tr := range h.Requests() {
		if strings.Contains(tr.Path, "Q8_0") {
			t.Errorf("the Q8_0 projector was fetched: %+v", tr)
		}
	}
	wantUsage(t, "--no-mmproj", "serve", "-m", "x.gguf", "--mmproj", "p.gguf", "--no-mmproj")
}

// TestManagedProjector: a managed model's projector (a --models-dir
// subdirectory's, a pulled repository's) is loaded with it, so it takes
// images, and its bytes count in the model's memory.
func TestManagedProjector(t *testing.T) {
	path, proj, _ := imageFixture(t)
	st := stat(t, path)
	pst := stat(t, proj)
	c, _, err := parseServeFS(t, "--models-dir", "d")
	if err != nil {
		t.Fatal(err)
	}
	spec := server.LoadSpec{Name: "s", Path: path, Projector: proj}
	size, err := c.measureManaged(c.Runtime, spec)
	if err != nil {
		t.Fatal(err)
	}
	if size.Weights != st.Size()+pst.Size() {
		t.Errorf("weights %d, want the model's %d and the projector's %d", size.Weights, st.Size(), pst.Size())
	}
	sys := newActorSystem()
	defer sys.Shutdown()
	rt, closeFn, err := c.loadManaged(sys, c.Runtime, backend.DeviceCPU, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !rt.HasImageEncoder() {
		t.Error("loaded without its projector")
	}
	rt.Stop(0)
	closeFn()
}
