package webui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/troupe-llm/troupe/server"
)

// TestBrowserThinking: a reply's reasoning_content (Qwen3's thinking,
// gpt-oss's analysis channel) shows apart from the answer, open while the
// model thinks and folded once the answer streams. The page's fetch of
// the chat route is given a stream of such deltas, as the server sends
// them for a reasoning model (stories260K does not reason).
func TestBrowserThinking(t *testing.T) {
	ts := newTestServer(t, server.Config{})
	bctx := startBrowser(t, 1000, 700)
	p := newPage(t, bctx)
	p.run("load", chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	// The chat route answers with reasoning deltas, waits for the page to
	// show them, then sends the answer.
	p.eval("script the stream", `(() => {
		const real = window.fetch;
		window.releaseAnswer = null;
		window.fetch = (url, init) => {
			if (!String(url).includes('/v1/chat/completions')) return real(url, init);
			const enc = new TextEncoder();
			const ev = d => enc.encode('data: ' + JSON.stringify({choices: [{index: 0, delta: d, finish_reason: null}]}) + '\n\n');
			const body = new ReadableStream({ start(c) {
				c.enqueue(ev({role: 'assistant', content: ''}));
				c.enqueue(ev({reasoning_content: 'Paris is'}));
				c.enqueue(ev({reasoning_content: ' in France.'}));
				window.releaseAnswer = () => {
					c.enqueue(ev({content: 'It is sunny.'}));
					c.enqueue(enc.encode('data: ' + JSON.stringify({choices: [{index: 0, delta: {}, finish_reason: 'stop'}]}) + '\n\ndata: [DONE]\n\n'));
					c.close();
				};
			}});
			return Promise.resolve(new Response(body, {status: 200, headers: {'Content-Type': 'text/event-stream'}}));
		};
		return true;
	})()`, nil)
	p.run("send", chromedp.SetValue(chromedp.CSS("#prompt"), "Weather in Paris?"), chromedp.Click(chromedp.CSS("#send")))
	p.wait("the thinking, open", `(() => { const d = document.querySelector('.msg.assistant .thinking');
		return d && d.open && d.lastElementChild.textContent === 'Paris is in France.' &&
			document.querySelector('.msg.assistant .body').textContent === '' })()`)
	p.eval("the answer", `window.releaseAnswer(), true`, nil)
	p.wait("the answer, the thinking folded", `(() => { const d = document.querySelector('.msg.assistant .thinking');
		return !document.getElementById('send').disabled && d && !d.open &&
			document.querySelector('.msg.assistant .body').textContent.trim() === 'It is sunny.' })()`)
}
