package webui_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/server"
	"github.com/troupe-llm/troupe/server/servetest"
)

// newManagedServer serves stories260K as "small" and TinyStories-656K as
// "tiny" through a model manager (each loaded on its first request, never
// unloaded), with SmolLM2's chat template; it returns the URL.
func newManagedServer(t *testing.T) string {
	t.Helper()
	sys := servetest.QuietSystem(t)
	load := func(_ context.Context, sys *actor.ActorSystem, spec server.LoadSpec) (*actors.Runtime, func(), error) {
		m, err := model.Open(spec.Path)
		if err != nil {
			return nil, nil, err
		}
		rt, err := actors.Start(sys, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCPU), MaxModelLen: spec.MaxModelLen})
		if err != nil {
			m.Close()
			return nil, nil, err
		}
		return rt, func() { m.Close() }, nil
	}
	mgr, err := server.NewManager(sys, server.ManagerConfig{
		Models: []server.ModelSource{{Name: "small", Path: testmodels.Path(t, "stories260K.gguf")},
			{Name: "tiny", Path: testmodels.Path(t, "TinyStories-656K-Q8_0.gguf")}},
		Server:    server.Config{ChatTemplate: servetest.Template(t, servetest.SmolLM2), Log: zerolog.Nop()},
		KeepAlive: -1, Load: load})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mgr.Handler())
	t.Cleanup(func() {
		hs.Close()
		mgr.Close()
	})
	return hs.URL
}

// TestBrowserModels: with two models served, the page's picker lists both
// from /v1/models with their status; the picked one answers (the page's
// greedy answer is the API's for that model, and the two models answer
// the same prompt differently), its status turns to loaded, and the pick
// outlives a reload. With one model the picker is hidden (TestBrowserImage).
func TestBrowserModels(t *testing.T) {
	url := newManagedServer(t)
	bctx := startBrowser(t, 1100, 800)
	p := newPage(t, bctx)

	p.run("load", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	p.wait("the picker", `(() => { const s = document.getElementById('model-select');
		return !s.hidden && [...s.options].map(o => o.textContent).join('|') === 'small (unloaded)|tiny (unloaded)' })()`)
	const prompt, maxTokens = "Tell me a story about a frog.", 16
	answers := map[string]string{}
	for i, name := range []string{"tiny", "small"} {
		if i > 0 {
			p.run("a new chat", chromedp.Click(chromedp.CSS("#new-conv")))
		}
		p.change("#model-select", name)
		r := p.send(prompt, maxTokens, 1)
		want := apiChat(t, url, "", map[string]any{"model": name, "messages": []any{map[string]any{"role": "user", "content": prompt}},
			"temperature": 0, "max_tokens": maxTokens})
		if r.Error != "" || r.Content != want.Content || r.Model != name {
			t.Errorf("%s: the page got %q from %q (error %q), the API %q", name, r.Content, r.Model, r.Error, want.Content)
		}
		answers[name] = r.Content
		p.wait(name+" loaded", `[...document.getElementById('model-select').options].some(o => o.textContent === '`+name+` (loaded)')`)
		var note string
		p.eval("the reply's note", `document.querySelector('.msg.assistant .note').textContent`, &note)
		if !strings.Contains(note, name) {
			t.Errorf("%s: the reply's note %q does not name the model", name, note)
		}
	}
	if answers["tiny"] == answers["small"] {
		t.Errorf("both models answered %q: the pick did not reach the server", answers["tiny"])
	}
	p.run("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	p.wait("the pick after a reload", `document.getElementById('model-select').value === 'small' &&
		[...document.getElementById('model-select').options].map(o => o.textContent).join('|') === 'small (loaded)|tiny (loaded)'`)
	var note string
	p.eval("the reply's note after a reload", `document.querySelector('.msg.assistant .note').textContent`, &note)
	if !strings.Contains(note, "small") {
		t.Errorf("after a reload, the reply's note %q does not name the model", note)
	}
	p.shoot("models")
	for _, e := range p.console.take() {
		if !strings.Contains(e, "/v1/live") { // the live view's stream asks for a loaded model
			t.Errorf("console: %s", e)
		}
	}
}
