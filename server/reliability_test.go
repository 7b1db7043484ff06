package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/server"
)

// slowDevice is a device whose every forward pass first sleeps delay: a
// slow or overloaded accelerator.
type slowDevice struct {
	actors.Backend
	delay time.Duration
}

func (s *slowDevice) Forward(b *model.Batch, logits []float32) error {
	time.Sleep(s.delay)
	return s.Backend.Forward(b, logits)
}

func slow(delay time.Duration) func(actors.Backend) actors.Backend {
	return func(be actors.Backend) actors.Backend { return &slowDevice{Backend: be, delay: delay} }
}

// stepGate is a device whose forward passes wait for a token on steps,
// until open is closed; so a test decides how far a request gets.
type stepGate struct {
	actors.Backend
	steps, open chan struct{}
}

func (g *stepGate) Forward(b *model.Batch, logits []float32) error {
	select {
	case <-g.steps:
	case <-g.open:
	}
	return g.Backend.Forward(b, logits)
}

// gated returns a held stepGate and the fixture's wrap that installs it.
func gated() (*stepGate, func(actors.Backend) actors.Backend) {
	g := &stepGate{steps: make(chan struct{}, 1), open: make(chan struct{})}
	return g, func(be actors.Backend) actors.Backend { g.Backend = be; return g }
}

// TestRequestTimeout: a request that runs past RequestTimeout (its device
// held after the first step, so it cannot end by itself) is cancelled and
// answered 408 (streaming: an error event, then [DONE]); one that fits in
// it is served; nothing is left running.
func TestRequestTimeout(t *testing.T) {
	gate, wrap := gated()
	f := newFixture(t, options{rt: actors.Config{NumBlocks: 64, BlockSize: 16},
		srv: server.Config{RequestTimeout: 3 * time.Second}, wrap: wrap})
	long := `"prompt": "Once upon a time", "max_tokens": 200, "ignore_eos": true`

	gate.steps <- struct{}{} // the prompt's step; the next one waits
	resp, b := post(t, f.url+"/v1/completions", `{`+long+`, "stream": true}`)
	events := strings.Split(strings.TrimSpace(string(b)), "\n\n")
	if resp.StatusCode != 200 || len(events) < 2 || events[len(events)-1] != "data: [DONE]" ||
		!strings.Contains(events[len(events)-2], `"error"`) || !strings.Contains(events[len(events)-2], "request-timeout") {
		t.Errorf("streaming: %d, last events %q", resp.StatusCode, events[max(len(events)-2, 0):])
	}

	resp, b = post(t, f.url+"/v1/completions", `{`+long+`}`)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "request_timeout") {
		t.Errorf("non-streaming: %d %s", resp.StatusCode, b)
	}

	close(gate.open)
	resp, b = post(t, f.url+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}`)
	if resp.StatusCode != 200 {
		t.Errorf("a short request: %d %s", resp.StatusCode, b)
	}
	f.waitIdle(t)
}

// TestOverload sends ten times what the server admits at once (4 running,
// 4 queued) in one burst, on a slow device with too few KV blocks for four
// full sequences (so the pool runs full and sequences are preempted). Every
// request is either served in full, with the text it gets on a quiet server,
// or turned away at once with 429 and Retry-After; /health and /metrics
// answer throughout.
func TestOverload(t *testing.T) {
	const running, queue, burst = 4, 4, 80
	f := newFixture(t, options{rt: actors.Config{MaxNumSeqs: running, NumBlocks: 12, BlockSize: 16},
		srv: server.Config{MaxQueue: queue}, wrap: slow(2 * time.Millisecond)})
	cases := loadCases(t)
	body := func(i int) string {
		return fmt.Sprintf(`{"prompt": %q, "max_tokens": 48, "temperature": 0, "ignore_eos": true, "stream": %v}`,
			cases[i%len(cases)].Prompt, i%2 == 1)
	}
	quiet := make([]string, len(cases))
	for i := range cases {
		text, _, done, err := streamCompletion(context.Background(), f.url, strings.Replace(body(i), `"stream": false`, `"stream": true`, 1))
		if err != nil || !done {
			t.Fatalf("quiet run %d: %v (done %v)", i, err, done)
		}
		quiet[i] = text
	}

	stop := make(chan struct{})
	probes := make(chan error, 1)
	var worst time.Duration
	go func() { // /health and /metrics, every 20ms while the burst runs
		defer close(probes)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for _, path := range []string{"/health", "/metrics"} {
				start := time.Now()
				resp, err := http.Get(f.url + path)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					probes <- fmt.Errorf("%s under load: %v", path, err)
					return
				}
				worst = max(worst, time.Since(start))
			}
		}
	}()

	var mu sync.Mutex
	var served, rejected int
	parallel(burst, func(i int) {
		text, status, err := complete(f.url, body(i))
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			t.Errorf("request %d: %v", i, err)
		case status == http.StatusTooManyRequests:
			rejected++
		case status != 200:
			t.Errorf("request %d: status %d", i, status)
		case text != quiet[i%len(cases)]:
			t.Errorf("request %d (case %d) under load:\n%q\nquiet:\n%q", i, i%len(cases), text, quiet[i%len(cases)])
		default:
			served++
		}
	})
	close(stop)
	if err := <-probes; err != nil {
		t.Error(err)
	}
	t.Logf("burst of %d: %d served, %d turned away (429); slowest /health or /metrics answer %v; %v preemptions",
		burst, served, rejected, worst, f.metric(t, "troupe:num_preemptions_total"))
	if served < running+queue || rejected == 0 || served+rejected != burst {
		t.Errorf("%d served and %d turned away of %d", served, rejected, burst)
	}
	if got := f.metric(t, `troupe:request_rejected_total{model_name="stories",status="429"}`); got != float64(rejected) {
		t.Errorf("metrics count %v rejections, the clients %d", got, rejected)
	}
	f.waitIdle(t)
}

// complete posts a completion, streaming or not as body says, and returns
// its text. A 429 must carry Retry-After; a stream must end with [DONE].
func complete(url, body string) (text string, status int, err error) {
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", resp.StatusCode, err
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "":
		return "", resp.StatusCode, fmt.Errorf("429 without Retry-After")
	case resp.StatusCode != 200:
		return "", resp.StatusCode, nil
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		text, done, err := readSSE(string(b))
		if err == nil && !done {
			err = fmt.Errorf("the stream did not end with [DONE]")
		}
		return text, 200, err
	}
	var r struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) != 1 {
		return "", 200, fmt.Errorf("response %s: %v", b, err)
	}
	return r.Choices[0].Text, 200, nil
}

// readSSE joins the choices' text of a completion stream; an error event is
// an error.
func readSSE(body string) (text string, done bool, err error) {
	var b strings.Builder
	for _, ev := range strings.Split(body, "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return b.String(), true, nil
		}
		var ch struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return "", false, err
		}
		if ch.Error != nil {
			return "", false, fmt.Errorf("error event: %s", ch.Error.Message)
		}
		for _, c := range ch.Choices {
			b.WriteString(c.Text)
		}
	}
	return b.String(), false, nil
}

// TestPprof: the profiles are off unless asked for, and behind the API key.
func TestPprof(t *testing.T) {
	get := func(url string, header ...string) int {
		req, _ := http.NewRequest(http.MethodGet, url+"/debug/pprof/", nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(newFixture(t, options{}).url); got != 404 {
		t.Errorf("profiles not asked for: %d", got)
	}
	f := newFixture(t, options{srv: server.Config{Pprof: true, APIKey: "sesame"}})
	if a, b := get(f.url), get(f.url, "Authorization", "Bearer sesame"); a != 401 || b != 200 {
		t.Errorf("profiles behind the key: %d without it, %d with it", a, b)
	}
}

// TestSlowClients: a client that sends its headers too slowly, or its body
// too slowly, has its connection closed (slowloris); one that stays idle
// after a request is let go too.
func TestSlowClients(t *testing.T) {
	f := newFixture(t, options{srv: server.Config{ReadHeaderTimeout: 200 * time.Millisecond,
		ReadTimeout: 400 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}})
	addr := strings.TrimPrefix(f.url, "http://")
	for _, tc := range []struct{ name, send string }{
		{"headers", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"},
		{"body", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"prompt\": "},
		{"idle", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.send); err != nil {
				t.Fatal(err)
			}
			// The server must close the connection well before this.
			conn.SetReadDeadline(time.Now().Add(60 * time.Second))
			start := time.Now()
			_, err = io.Copy(io.Discard, conn)
			if err != nil {
				t.Fatalf("connection still open after %v: %v", time.Since(start), err)
			}
		})
	}
}
