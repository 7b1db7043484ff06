package webui_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/troupe-llm/troupe/server"
)

// TestBrowser drives the page in headless chromium: the key, a greedy chat
// equal to the API's, the stop button, the conversation after a reload,
// the live view under load, the markdown renderer's escaping; no console
// errors; screenshots saved.
func TestBrowser(t *testing.T) {
	ts := newTestServer(t, server.Config{APIKey: apiKey})
	bctx := startBrowser(t, 1280, 860) // closed before the server (its streams end first)
	p := newPage(t, bctx)
	browserKey(t, p, ts)
	browserChat(t, p, ts)
	browserStop(t, p, ts)
	browserReload(p)
	browserLive(t, p, ts)
	browserMarkdown(t, p)
	for _, e := range p.console.take() {
		t.Errorf("console: %s", e)
	}
	t.Logf("screenshots in %s", p.shots)
}

// The conversation TestBrowser's steps hold: a greedy chat, then a long
// generation, stopped.
const (
	browserSystem    = "You tell short stories."
	browserPrompt    = "Tell me a story about a cat."
	browserMaxTokens = 24
	browserReply     = `JSON.parse(localStorage.getItem('troupe.convs'))[0].messages[1]`
	browserLong      = `JSON.parse(localStorage.getItem('troupe.convs'))[0].messages[3]`
)

// browserKey: without the key the page loads but its data is refused;
// with it, the model's name and the live stream show.
func browserKey(t *testing.T, p page, ts *testServer) {
	t.Helper()
	p.run("load", chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	p.wait("the page asking for the key", `document.getElementById('model').textContent.includes('API key') &&
		document.getElementById('live-status').textContent.includes('API key')`)
	for _, e := range p.console.take() {
		if !strings.Contains(e, "401") {
			t.Errorf("before the key was entered: %s", e)
		}
	}
	p.change("#api-key", apiKey)
	p.wait("the model's name", `document.getElementById('model').textContent.startsWith('stories')`)
	p.wait("the live stream", `document.getElementById('live-status').textContent === 'live'`)
}

// browserChat: a greedy chat; the streamed text is the API's output for
// the same request.
func browserChat(t *testing.T, p page, ts *testServer) {
	t.Helper()
	p.run("send a prompt", chromedp.SetValue(chromedp.CSS("#system"), browserSystem), chromedp.SetValue(chromedp.CSS("#temperature"), "0"),
		chromedp.SetValue(chromedp.CSS("#max-tokens"), strconv.Itoa(browserMaxTokens)), chromedp.SetValue(chromedp.CSS("#prompt"), browserPrompt),
		chromedp.Click(chromedp.CSS("#send")))
	p.wait("the reply", `!document.getElementById('send').disabled && `+browserReply+`.finish !== undefined`)
	var got struct{ Content, Finish string }
	p.eval("read the reply", browserReply, &got)
	want := apiChat(t, ts.url, apiKey, map[string]any{"messages": []map[string]string{{"role": "system", "content": browserSystem},
		{"role": "user", "content": browserPrompt}}, "temperature": 0, "max_tokens": browserMaxTokens})
	if got.Content != want.Content || got.Finish != want.Finish || want.Content == "" {
		t.Errorf("the page streamed %q (%s), the API answers %q (%s)", got.Content, got.Finish, want.Content, want.Finish)
	}
	if shown := strings.Join(strings.Fields(p.text(".msg.assistant .body")), " "); shown != strings.Join(strings.Fields(want.Content), " ") {
		t.Errorf("the page shows %q, want %q", shown, want.Content)
	}
	p.shoot("chat")
}

// browserStop: stopping a long generation cancels the request; nothing
// runs after it, and the reply keeps what streamed. The device runs one
// forward pass per look at the page until the reply shows, then waits: the
// request cannot end before the stop, however slow the page.
func browserStop(t *testing.T, p page, ts *testServer) {
	t.Helper()
	pace := make(chan struct{}, 1)
	ts.pace.Store(&pace)
	p.run("send a long prompt", chromedp.SetValue(chromedp.CSS("#max-tokens"), "350"),
		chromedp.SetValue(chromedp.CSS("#prompt"), "Tell me a long story about a dog."), chromedp.Click(chromedp.CSS("#send")))
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) { // bounds a hang only
		var n int
		p.eval("the long reply's length", `(document.querySelectorAll('.msg.assistant .body')[1] || {textContent: ''}).textContent.length`, &n)
		if n > 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the long reply shows %d characters after 2 minutes", n)
		}
		select {
		case pace <- struct{}{}:
		default: // the last pass's token is still there
		}
	}
	if ts.metric(t, "troupe:num_requests_running") != 1 {
		t.Errorf("the long request is not running")
	}
	p.run("stop", chromedp.Click(chromedp.CSS("#stop")))
	p.wait("the stop", `!document.getElementById('send').disabled && `+browserLong+`.finish === 'stopped'`)
	ts.pace.Store(nil)
	close(pace)
	deadline := time.Now().Add(2 * time.Minute) // bounds a hang only
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
	p.eval("read the stopped reply", browserLong, &stopped)
	if n := len(stopped.Content); n == 0 || n > 1000 {
		t.Errorf("the stopped reply has %d bytes", n)
	}
	p.shoot("stopped")
}

// browserReload: the conversation and the key outlive a reload
// (localStorage).
func browserReload(p page) {
	p.t.Helper()
	p.run("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	p.wait("the conversation after a reload", `document.querySelectorAll('#messages .msg').length === 4 &&
		document.querySelector('#conv-list li.active .open').textContent === `+strconv.Quote(browserPrompt)+` &&
		document.getElementById('system').value === `+strconv.Quote(browserSystem)+` && document.getElementById('live-status').textContent === 'live'`)
}

// browserLive: under load, the live view's counters move. The device is
// paced by the page: one forward pass per live event the page has shown,
// until the page has shown an event with requests running, tokens sampled
// and a batch of several sequences; so the load outlasts the page however
// slow either is.
func browserLive(t *testing.T, p page, ts *testServer) {
	t.Helper()
	p.run("the live tab", chromedp.Click(chromedp.CSS("#tab-live")), chromedp.WaitVisible(chromedp.CSS("#live-devices")))
	p.wait("the device row, the chat hidden", `document.getElementById('d0-steps') !== null && document.getElementById('chat-view').offsetParent === null`)
	before, _ := strconv.Atoi(p.text("#live-sampled"))
	stepsBefore, _ := strconv.Atoi(p.text("#d0-steps"))
	// liveSeen counts the events the page shows (onLive sets #live-tps once
	// per event) and latches the first one under load.
	p.eval("watch the live events", `(() => { window.liveSeen = {events: 0, loaded: false};
		const v = id => +(document.getElementById(id) || {}).textContent;
		new MutationObserver(() => { liveSeen.events++;
			if (v('d0-running') > 0 && v('live-tps') > 0 && v('d0-batch-seqs') > 1) liveSeen.loaded = true; })
			.observe(document.getElementById('live-tps'), {childList: true, characterData: true, subtree: true}); })()`, nil)
	pace := make(chan struct{}, 1)
	ts.pace.Store(&pace)
	const clients, loadTokens = 4, 64
	var wg sync.WaitGroup
	var loaded atomic.Int64
	for i := range clients {
		wg.Go(func() {
			r := apiChat(t, ts.url, apiKey, map[string]any{"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("Story number %d.", i)}},
				"temperature": 0, "max_tokens": loadTokens, "ignore_eos": true})
			loaded.Add(int64(r.CompletionTokens))
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for events := -1; ; {
		p.wait("a live event", fmt.Sprintf("liveSeen.events > %d || liveSeen.loaded", events))
		var seen struct {
			Events int
			Loaded bool
		}
		p.eval("read the live events", "liveSeen", &seen)
		if seen.Loaded {
			break
		}
		select {
		case <-done:
			ts.pace.Store(nil)
			close(pace)
			t.Fatalf("the load ended (%d tokens) before the live view showed it", loaded.Load())
		case pace <- struct{}{}:
		default: // the last pass's token is still there
		}
		events = seen.Events
	}
	p.shoot("live")
	ts.pace.Store(nil)
	close(pace)
	wg.Wait()
	if loaded.Load() != clients*loadTokens {
		t.Fatalf("the load generated %d tokens, want %d", loaded.Load(), clients*loadTokens)
	}
	p.wait("the counters after the load", fmt.Sprintf(`+document.getElementById('live-sampled').textContent >= %d &&
		document.getElementById('d0-running').textContent === '0' &&
		document.querySelector('#spark-ttft polyline').getAttribute('points') !== '' && document.querySelector('#spark-itl polyline').getAttribute('points') !== ''`,
		before+clients*loadTokens))
	if steps, _ := strconv.Atoi(p.text("#d0-steps")); steps <= stepsBefore {
		t.Errorf("steps %d before the load, %d after", stepsBefore, steps)
	}
}

// browserMarkdown: the markdown renderer makes code blocks, and nothing of
// the source becomes markup.
func browserMarkdown(t *testing.T, p page) {
	t.Helper()
	var html string
	p.eval("markdown", "renderMarkdown("+strconv.Quote("# T <b>\n<img src=x onerror=alert(1)> **bold** `<i>` [a](javascript:alert(1)) [b](https://x.org/?a=\"b\")\n```js\n<script>alert(1)</script>\n```\n- one")+")", &html)
	for _, want := range []string{"<h1>T &lt;b&gt;</h1>", "&lt;img src=x onerror=alert(1)&gt;", "<strong>bold</strong>", "<code>&lt;i&gt;</code>",
		"[a](javascript:alert(1))", `<a href="https://x.org/?a=&quot;b&quot;" rel="noopener noreferrer" target="_blank">b</a>`,
		`<pre><code class="language-js">&lt;script&gt;alert(1)&lt;/script&gt;</code></pre>`, "<ul><li>one</li></ul>"} {
		if !strings.Contains(html, want) {
			t.Errorf("markdown: %q lacks %q", html, want)
		}
	}
}

// TestNoWebUI: with NoWebUI, / is a 404 and the live stream still answers.
func TestNoWebUI(t *testing.T) {
	ts := newTestServer(t, server.Config{NoWebUI: true})
	for _, c := range []struct {
		path string
		want int
	}{{"/", http.StatusNotFound}, {"/webui/app.js", http.StatusNotFound}, {"/v1/live", http.StatusOK}} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a hang only
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
