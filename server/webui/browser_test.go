package webui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/internal/promtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/server"
)

const apiKey = "test-key"

// slowDevice sleeps delay (nanoseconds, changed by the test as it goes)
// before each forward pass, so a generation can be stopped mid-way.
type slowDevice struct {
	actors.Backend
	delay *atomic.Int64
}

func (s *slowDevice) Forward(b *model.Batch, logits []float32) error {
	time.Sleep(time.Duration(s.delay.Load()))
	return s.Backend.Forward(b, logits)
}

// testServer is troupe's server over stories260K with SmolLM2's chat
// template, its device slowed by *delay.
type testServer struct {
	url   string
	delay atomic.Int64
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
	tmpl, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "templates", "HuggingFaceTB-SmolLM2-135M-Instruct.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	ts := &testServer{}
	be, err := backend.NewCPU(m, 128, 16, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	rc.Backends, rc.NumBlocks, rc.BlockSize = []actors.Backend{&slowDevice{Backend: be, delay: &ts.delay}}, 128, 16
	rt, err := actors.Start(sys, m, rc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ModelName, cfg.ChatTemplate, cfg.Log = "stories", string(tmpl), zerolog.Nop()
	srv, err := server.New(sys, rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(nil)
	hs.Config = srv.HTTPServer()
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		if err := rt.Stop(5 * time.Second); err != nil {
			t.Error(err)
		}
	})
	srv.Ready()
	ts.url = hs.URL
	return ts
}

// chat posts a non-streaming chat request and returns its reply.
func (ts *testServer) chat(t *testing.T, body map[string]any) (content, finish string, tokens int) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, ts.url+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || len(out.Choices) != 1 {
		t.Errorf("chat: status %d, %v", resp.StatusCode, err)
		return
	}
	return out.Choices[0].Message.Content, out.Choices[0].FinishReason, out.Usage.CompletionTokens
}

func (ts *testServer) metric(t *testing.T, name string) float64 {
	t.Helper()
	v, err := promtest.Sample(http.DefaultClient, ts.url, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
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

// consoleLog gathers what the page reports as errors: console.error and
// console.assert calls, uncaught exceptions, and the browser's own error
// entries (failed loads, CSP violations).
type consoleLog struct {
	mu   sync.Mutex
	errs []string
}

func (c *consoleLog) read(ctx context.Context) {
	for m, err := range chromedp.Console(ctx) {
		if err != nil {
			return
		}
		if m.Type == chromedp.ConsoleError || m.Type == "assert" || m.IsException() {
			c.mu.Lock()
			c.errs = append(c.errs, m.String()+" "+m.URL)
			c.mu.Unlock()
		}
	}
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

// TestBrowser drives the page in headless chromium: the key, a greedy chat
// equal to the API's, the stop button, the live view under load, the
// markdown renderer's escaping; no console errors; screenshots saved.
func TestBrowser(t *testing.T) {
	ts := newTestServer(t, server.Config{APIKey: apiKey})
	bctx := startBrowser(t, 1280, 860) // closed before the server (its streams end first)
	shots := artifacts(t)

	var console consoleLog
	go console.read(bctx)
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shoot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(shots, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(p); err != nil || st.Size() < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("screenshot %s: %d bytes, %v", p, len(png), err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return s
	}
	waitJS := func(what, expr string) {
		t.Helper()
		run(what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
	}
	eval := func(what, expr string, v any) {
		t.Helper()
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
		if err == nil {
			err = json.Unmarshal(raw, v)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	// Without the key the page loads but its data is refused.
	run("load", chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(css("#prompt")))
	waitJS("the page asking for the key", `document.getElementById('model').textContent.includes('API key') &&
		document.getElementById('live-status').textContent.includes('API key')`)
	for _, e := range console.take() {
		if !strings.Contains(e, "401") {
			t.Errorf("before the key was entered: %s", e)
		}
	}
	run("enter the key", chromedp.SetValue(css("#api-key"), apiKey),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`document.getElementById('api-key').dispatchEvent(new Event('change'))`)(ctx, tg)
			return err
		}))
	waitJS("the model's name", `document.getElementById('model').textContent.startsWith('stories')`)
	waitJS("the live stream", `document.getElementById('live-status').textContent === 'live'`)

	// A greedy chat: the streamed text is the API's output for the same request.
	const system, prompt, maxTokens = "You tell short stories.", "Tell me a story about a cat.", 24
	run("send a prompt", chromedp.SetValue(css("#system"), system), chromedp.SetValue(css("#temperature"), "0"),
		chromedp.SetValue(css("#max-tokens"), strconv.Itoa(maxTokens)), chromedp.SetValue(css("#prompt"), prompt),
		chromedp.Click(css("#send")))
	const reply = `JSON.parse(localStorage.getItem('troupe.convs'))[0].messages[1]`
	waitJS("the reply", `!document.getElementById('send').disabled && `+reply+`.finish !== undefined`)
	var got struct{ Content, Finish string }
	eval("read the reply", reply, &got)
	want, finish, _ := ts.chat(t, map[string]any{"messages": []map[string]string{{"role": "system", "content": system}, {"role": "user", "content": prompt}},
		"temperature": 0, "max_tokens": maxTokens})
	if got.Content != want || got.Finish != finish || want == "" {
		t.Errorf("the page streamed %q (%s), the API answers %q (%s)", got.Content, got.Finish, want, finish)
	}
	if shown := strings.Join(strings.Fields(text(".msg.assistant .body")), " "); shown != strings.Join(strings.Fields(want), " ") {
		t.Errorf("the page shows %q, want %q", shown, want)
	}
	shoot("chat")

	// Stop a long generation: the request is cancelled, nothing runs.
	ts.delay.Store(int64(30 * time.Millisecond))
	run("send a long prompt", chromedp.SetValue(css("#max-tokens"), "350"),
		chromedp.SetValue(css("#prompt"), "Tell me a long story about a dog."), chromedp.Click(css("#send")))
	const long = `JSON.parse(localStorage.getItem('troupe.convs'))[0].messages[3]`
	waitJS("the long reply streaming", `document.querySelectorAll('.msg.assistant .body')[1].textContent.length > 10`)
	if ts.metric(t, "troupe:num_requests_running") != 1 {
		t.Errorf("the long request is not running")
	}
	run("stop", chromedp.Click(css("#stop")))
	waitJS("the stop", `!document.getElementById('send').disabled && `+long+`.finish === 'stopped'`)
	deadline := time.Now().Add(30 * time.Second)
	for ts.metric(t, "troupe:num_requests_running") != 0 || ts.metric(t, "troupe:kv_cache_usage_perc") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after stop: %v running, KV usage %v", ts.metric(t, "troupe:num_requests_running"), ts.metric(t, "troupe:kv_cache_usage_perc"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := ts.metric(t, `troupe:request_success_total{finished_reason="cancelled",model_name="stories"}`); n != 1 {
		t.Errorf("%v requests cancelled, want 1", n)
	}
	var stopped struct{ Content string }
	eval("read the stopped reply", long, &stopped)
	if n := len(stopped.Content); n == 0 || n > 1000 {
		t.Errorf("the stopped reply has %d bytes", n)
	}
	shoot("stopped")

	// The conversation and the key outlive a reload (localStorage).
	run("reload", chromedp.Reload(), chromedp.WaitVisible(css("#prompt")))
	waitJS("the conversation after a reload", `document.querySelectorAll('#messages .msg').length === 4 &&
		document.querySelector('#conv-list li.active .open').textContent === `+strconv.Quote(prompt)+` &&
		document.getElementById('system').value === `+strconv.Quote(system)+` && document.getElementById('live-status').textContent === 'live'`)

	// Load: the live view's counters move.
	ts.delay.Store(int64(25 * time.Millisecond)) // the load lasts several of the live view's intervals
	run("the live tab", chromedp.Click(css("#tab-live")), chromedp.WaitVisible(css("#live-devices")))
	waitJS("the device row, the chat hidden", `document.getElementById('d0-steps') !== null && document.getElementById('chat-view').offsetParent === null`)
	before, _ := strconv.Atoi(text("#live-sampled"))
	stepsBefore, _ := strconv.Atoi(text("#d0-steps"))
	const clients, loadTokens = 4, 64
	var wg sync.WaitGroup
	var loaded atomic.Int64
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, n := ts.chat(t, map[string]any{"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("Story number %d.", i)}},
				"temperature": 0, "max_tokens": loadTokens, "ignore_eos": true})
			loaded.Add(int64(n))
		}()
	}
	waitJS("the live view under load", `+document.getElementById('d0-running').textContent > 0 && +document.getElementById('live-tps').textContent > 0 &&
		+document.getElementById('d0-batch-seqs').textContent > 1`)
	shoot("live")
	wg.Wait()
	if loaded.Load() != clients*loadTokens {
		t.Fatalf("the load generated %d tokens, want %d", loaded.Load(), clients*loadTokens)
	}
	waitJS("the counters after the load", fmt.Sprintf(`+document.getElementById('live-sampled').textContent >= %d &&
		document.getElementById('d0-running').textContent === '0' &&
		document.querySelector('#spark-ttft polyline').getAttribute('points') !== '' && document.querySelector('#spark-itl polyline').getAttribute('points') !== ''`,
		before+clients*loadTokens))
	if steps, _ := strconv.Atoi(text("#d0-steps")); steps <= stepsBefore {
		t.Errorf("steps %d before the load, %d after", stepsBefore, steps)
	}

	// The markdown renderer: code blocks, and nothing of the source becomes markup.
	var html string
	eval("markdown", "renderMarkdown("+strconv.Quote("# T <b>\n<img src=x onerror=alert(1)> **bold** `<i>` [a](javascript:alert(1)) [b](https://x.org/?a=\"b\")\n```js\n<script>alert(1)</script>\n```\n- one")+")", &html)
	for _, want := range []string{"<h1>T &lt;b&gt;</h1>", "&lt;img src=x onerror=alert(1)&gt;", "<strong>bold</strong>", "<code>&lt;i&gt;</code>",
		"[a](javascript:alert(1))", `<a href="https://x.org/?a=&quot;b&quot;" rel="noopener noreferrer" target="_blank">b</a>`,
		`<pre><code class="language-js">&lt;script&gt;alert(1)&lt;/script&gt;</code></pre>`, "<ul><li>one</li></ul>"} {
		if !strings.Contains(html, want) {
			t.Errorf("markdown: %q lacks %q", html, want)
		}
	}
	for _, e := range console.take() {
		t.Errorf("console: %s", e)
	}
	t.Logf("screenshots in %s", shots)
}

// TestNoWebUI: with NoWebUI, / is a 404 and the live stream still answers.
func TestNoWebUI(t *testing.T) {
	ts := newTestServer(t, server.Config{NoWebUI: true})
	for _, c := range []struct {
		path string
		want int
	}{{"/", http.StatusNotFound}, {"/webui/app.js", http.StatusNotFound}, {"/v1/live", http.StatusOK}} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.url+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cancel()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s: %d, want %d", c.path, resp.StatusCode, c.want)
		}
	}
}
