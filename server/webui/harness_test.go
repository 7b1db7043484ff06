package webui_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/internal/promtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/server"
	"github.com/troupe-llm/troupe/server/servetest"
)

const apiKey = "test-key"

// pacedDevice is a device the test holds: while pace is set, each forward
// pass first takes a token from it (closed: none held), so a generation
// lasts until the test lets it end.
type pacedDevice struct {
	actors.Backend
	pace *atomic.Pointer[chan struct{}]
}

func (s *pacedDevice) Forward(b *model.Batch, logits []float32) error {
	if ch := s.pace.Load(); ch != nil {
		<-*ch
	}
	return s.Backend.Forward(b, logits)
}

// testServer is troupe's server over stories260K with SmolLM2's chat
// template, its device paced by pace.
type testServer struct {
	url  string
	pace atomic.Pointer[chan struct{}]
}

func newTestServer(t *testing.T, cfg server.Config) *testServer {
	t.Helper()
	return newTestServerWith(t, cfg, actors.Config{})
}

// newTestServerWith is newTestServer with rc's encoder (a projector).
func newTestServerWith(t *testing.T, cfg server.Config, rc actors.Config) *testServer {
	t.Helper()
	m, err := model.Open(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	sys := servetest.QuietSystem(t)
	ts := &testServer{}
	be, err := backend.NewCPU(m, 128, 16, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	rc.Backends, rc.NumBlocks, rc.BlockSize = []actors.Backend{&pacedDevice{Backend: be, pace: &ts.pace}}, 128, 16
	rt, err := actors.Start(sys, m, rc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ModelName, cfg.ChatTemplate, cfg.Log = "stories", servetest.Template(t, servetest.SmolLM2), zerolog.Nop()
	srv, err := server.New(sys, rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.url = servetest.Listen(t, srv, rt, nil)
	srv.Ready()
	return ts
}

// metric reads one sample of the server's /metrics (promtest.Await).
func (ts *testServer) metric(t *testing.T, name string) float64 {
	return promtest.Await(t, ts.url, name)
}

// apiReply is a non-streaming chat answer.
type apiReply struct {
	Content, Finish                string
	PromptTokens, CompletionTokens int
}

// apiChat posts a non-streaming chat request to url, with key as the API
// key when it is set, and returns its answer. A failure is an error of
// the test (not fatal: it may run in a goroutine) and a zero answer.
func apiChat(t *testing.T, url, key string, body map[string]any) apiReply {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return apiReply{}
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || len(out.Choices) != 1 {
		t.Errorf("chat: status %d, %v", resp.StatusCode, err)
		return apiReply{}
	}
	c := out.Choices[0]
	return apiReply{Content: c.Message.Content, Finish: c.FinishReason, PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens}
}

// chromium returns Debian's chromium ($TROUPE_CHROMIUM, else the PATH), or
// ends the test: a failure under CI, a skip elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TROUPE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no chromium on the PATH (make testdata installs it: scripts/testdata-chromium.sh)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; skipped outside CI")
	return ""
}

// artifacts is where the screenshots go: $TROUPE_ARTIFACTS/webui, else a
// folder of the test's temporary directory.
func artifacts(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "artifacts")
	if a := os.Getenv("TROUPE_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "webui")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// consoleLog gathers what a tab reports as errors: console.error and
// console.assert calls, uncaught exceptions, and the browser's own error
// entries (failed loads, CSP violations).
type consoleLog struct {
	mu   sync.Mutex
	errs []string
}

// watch gathers the errors of ctx's tab until ctx ends; it listens before
// it returns.
func (c *consoleLog) watch(ctx context.Context) {
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == "assert" || m.IsException() {
				c.mu.Lock()
				c.errs = append(c.errs, m.String()+" "+m.URL)
				c.mu.Unlock()
			}
		}
	}()
}

// take returns the errors so far and forgets them.
func (c *consoleLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.errs
	c.errs = nil
	return e
}

// startBrowser starts chromium (headless, a window of w×h) and returns
// its context, closed when the test ends: start it after the test server,
// whose shutdown waits for the browser's open streams.
func startBrowser(t *testing.T, w, h int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.WindowSize(w, h), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(bctx); err != nil { // starts the browser, without a deadline
		t.Fatalf("starting chromium: %v", err)
	}
	return bctx
}

// page drives one tab of headless chromium; a failed action ends the test.
// Its console holds the tab's errors; its screenshots go to artifacts.
type page struct {
	t       *testing.T
	ctx     context.Context
	console *consoleLog
	shots   string
}

// newPage opens a tab in bctx's browser, closed when the test ends.
func newPage(t *testing.T, bctx context.Context) page {
	t.Helper()
	tab, cancelTab := chromedp.NewContext(bctx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(tab); err != nil { // opens the tab, without a deadline
		t.Fatalf("opening a tab: %v", err)
	}
	p := page{t: t, console: &consoleLog{}, shots: artifacts(t)}
	p.console.watch(tab)
	ctx, cancel := context.WithTimeout(tab, 3*time.Minute)
	t.Cleanup(cancel)
	p.ctx = ctx
	return p
}

func (p page) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// wait polls expr until it is true (a generous bound: CI is a busy box).
func (p page) wait(what, expr string) {
	p.t.Helper()
	p.run(what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(90*time.Second)))
}

// eval evaluates expr and decodes its value into v (nil: ignored).
func (p page) eval(what, expr string, v any) {
	p.t.Helper()
	raw, err := chromedp.Run(p.ctx, chromedp.Evaluate[json.RawMessage](expr))
	if err == nil && v != nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// text is the text of the element sel.
func (p page) text(sel string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// change sets the value of the element sel and fires its change event,
// as a user's edit does.
func (p page) change(sel, value string) {
	p.t.Helper()
	p.run("set "+sel, chromedp.SetValue(chromedp.CSS(sel), value))
	p.eval("the change of "+sel, `document.querySelector(`+strconv.Quote(sel)+`).dispatchEvent(new Event('change'))`, nil)
}

// shoot saves a screenshot of the page as name.png in the artifacts.
func (p page) shoot(name string) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(p.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	if len(png) < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		p.t.Errorf("screenshot %s: %d bytes, not a PNG", path, len(png))
	}
}

// pasteImage pastes a PNG into the prompt as a browser's clipboard does
// (a paste event carrying the file); it reports whether the page kept the
// paste from the text.
func (p page) pasteImage(data []byte) bool {
	p.t.Helper()
	var prevented bool
	p.eval("paste an image", `(() => {
		const bytes = Uint8Array.from(atob(`+strconv.Quote(base64.StdEncoding.EncodeToString(data))+`), c => c.charCodeAt(0));
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], 'pasted.png', {type: 'image/png'}));
		const ev = new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true});
		document.getElementById('prompt').dispatchEvent(ev);
		return ev.defaultPrevented;
	})()`, &prevented)
	return prevented
}

// send types text and a greedy setting, clicks Send and waits for the
// reply at messages[index] of the current conversation; it returns it.
func (p page) send(text string, maxTokens, index int) pageReply {
	p.t.Helper()
	p.run("send "+text, chromedp.SetValue(chromedp.CSS("#temperature"), "0"), chromedp.SetValue(chromedp.CSS("#max-tokens"), strconv.Itoa(maxTokens)),
		chromedp.SetValue(chromedp.CSS("#prompt"), text), chromedp.Click(chromedp.CSS("#send")))
	reply := `(() => { const cs = JSON.parse(localStorage.getItem('troupe.convs')); const c = cs.find(c => c.id === JSON.parse(localStorage.getItem('troupe.current')));
		return c.messages[` + strconv.Itoa(index) + `] })()`
	p.wait("the reply to "+text, `!document.getElementById('send').disabled && (`+reply+` || {}).role === 'assistant' &&
		(`+reply+`.finish !== undefined || `+reply+`.error !== undefined)`)
	var r pageReply
	p.eval("read the reply", reply, &r)
	return r
}

// pageReply is an assistant message as the page keeps it.
type pageReply struct {
	Content, Finish, Error, Model string
	Usage                         struct {
		PromptTokens int `json:"prompt_tokens"`
	}
}
