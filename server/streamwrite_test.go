package server_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/internal/syncbuf"
	"github.com/troupe-llm/troupe/server"
)

// stalledStream opens a streaming completion on a raw TCP connection with
// a small receive buffer and never reads its response; the connection
// stays open until the test ends.
func stalledStream(t *testing.T, host string) {
	t.Helper()
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(1024); err != nil {
		t.Fatal(err)
	}
	body := `{"prompt": "Once upon a time", "max_tokens": 400, "n": 8, "ignore_eos": true, "stream": true, "logprobs": 5}`
	if _, err := fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		host, len(body), body); err != nil {
		t.Fatal(err)
	}
}

// TestStalledReadersFreed replays the audit's stalled readers: clients that
// stop reading their streams but keep their sockets open, as many as the
// server admits. Each write has WriteStallTimeout to make progress; past
// it the request is cancelled, its sequences end and its admission slot
// is freed, so other clients are served while the stalled sockets are
// still open. (Before, they held every slot, and every other request was a
// 429, until they closed.) The stall bound is short here so that the test
// does not wait long; what it asserts is state (the runtime idle, a
// request answered), polled with a generous deadline.
func TestStalledReadersFreed(t *testing.T) {
	log := &syncbuf.Buffer{}
	f := newFixture(t, options{
		rt:    actors.Config{MaxNumSeqs: 2},
		srv:   server.Config{MaxQueue: -1, WriteStallTimeout: 200 * time.Millisecond},
		logTo: log,
		connState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				_ = c.(*net.TCPConn).SetWriteBuffer(4096) // the server's side fills at once too
			}
		},
	})
	host := strings.TrimPrefix(f.url, "http://")
	for range 2 { // the admission limit: MaxNumSeqs, no queue
		stalledStream(t, host)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(log.String(), "did not read its response") {
		if time.Now().After(deadline) {
			t.Fatalf("no stalled write seen in 60s; log:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		resp, b := post(t, f.url+"/v1/completions", `{"prompt": "Once", "max_tokens": 4}`)
		if resp.StatusCode == 200 && f.rt.NumRequests() == 0 {
			break
		}
		if resp.StatusCode != 200 && resp.StatusCode != 429 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("with two stalled readers connected: status %d %s, %d runtime requests in flight", resp.StatusCode, b, f.rt.NumRequests())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
