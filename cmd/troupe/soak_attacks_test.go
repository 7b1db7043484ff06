package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
)

var soakAttacks = flag.Bool("soak-attacks", true, "mix issue 28's audit attacks into TestSoak's traffic")

// soakStallTimeout is the soak server's --write-stall-timeout: short, so
// that the stalled readers are cut within the run, and long enough that a
// client that reads (on a busy 2-core machine) never stalls that long.
const soakStallTimeout = 5 * time.Second

// soakAttack is one of issue 28's audit attacks. run sends it once and
// returns its outcome (a short label, counted) and whether that outcome
// is the documented refusal or a bounded result.
type soakAttack struct {
	name string
	run  func(ctx context.Context, c *soakClient, iter int) (outcome string, ok bool)
}

// soakAttackList are the attacks, each run in a loop by its own client
// beside the legitimate ones. Grammar attacks cycle through 8 variants, so
// each is compiled afresh at first and the server's grammar cache holds a
// bounded number of them (the heap check at the end stays meaningful).
func soakAttackList() []soakAttack {
	nested := func(iter int) string { // the audit's nested type-list schema
		s := `{"type": "string"}`
		for i := range 18 {
			s = fmt.Sprintf(`{"type": ["object", "array", "object"], "properties": {"v%d_%d": %s}, "items": {"$comment": "x"}}`, iter%8, i, s)
		}
		return s
	}
	var cls strings.Builder // a class of 2000 code points, repeated 2000 times
	cls.WriteString("[")
	for i := range 2000 {
		fmt.Fprintf(&cls, `\u%04X`, 0x100+3*i)
	}
	cls.WriteString("]")
	user := `"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 16, "temperature": 0`
	tool := func(params string) string {
		return `{"type": "function", "function": {"name": "f", "parameters": ` + params + `}}`
	}
	return []soakAttack{
		{"schema in response_format", func(ctx context.Context, c *soakClient, iter int) (string, bool) {
			body := `{` + user + `, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": ` + nested(iter) + `}}}`
			return c.status(ctx, "/v1/chat/completions", body, nil, 200, 400)
		}},
		{"schema in tools, required", func(ctx context.Context, c *soakClient, iter int) (string, bool) {
			body := `{` + user + `, "tools": [` + tool(`{"type": "object"}`) + `, ` + tool(nested(iter)) + `], "tool_choice": "required"}`
			return c.status(ctx, "/v1/chat/completions", body, nil, 200, 400)
		}},
		{"GBNF [class]{2000}", func(ctx context.Context, c *soakClient, iter int) (string, bool) {
			g, _ := json.Marshal(fmt.Sprintf("root ::= %s{2000} [a-%c]", cls.String(), 'b'+iter%8))
			body := `{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0, "grammar": ` + string(g) + `}`
			return c.status(ctx, "/v1/completions", body, nil, 200, 400)
		}},
		{"4 x 3 MB /tokenize at once", func(ctx context.Context, c *soakClient, iter int) (string, bool) {
			prompt, _ := json.Marshal(strings.Repeat("Lily and the dog played in the park. ", 3<<20/37))
			type result struct {
				outcome string
				ok      bool
			}
			out := make(chan result, 4)
			for range 4 {
				go func() {
					o, ok := c.status(ctx, "/tokenize", `{"prompt": `+string(prompt)+`}`, nil, 400, 413, 429)
					out <- result{o, ok}
				}()
			}
			worst := result{ok: true}
			for range 4 { // the last outcome, or an unexpected one
				if r := <-out; worst.ok {
					worst = r
				}
			}
			return worst.outcome, worst.ok
		}},
		{"stalled stream reader", stalledReader},
		{"cross-site text/plain POST", func(ctx context.Context, c *soakClient, iter int) (string, bool) {
			return c.status(ctx, "/v1/completions", `{"prompt": "Once", "max_tokens": 4}`,
				map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403)
		}},
		{"foreign Host", func(ctx context.Context, c *soakClient, iter int) (string, bool) {
			return c.status(ctx, "/v1/completions", `{"prompt": "Once", "max_tokens": 4}`,
				map[string]string{"Host": "evil.example"}, 403)
		}},
	}
}

// runSoakAttacks starts one client per attack (added to wg) that runs it
// until end, paced, and passes each outcome to record.
func runSoakAttacks(c *soakClient, end time.Time, wg *sync.WaitGroup, record func(name, outcome string, ok bool)) {
	for _, a := range soakAttackList() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for iter := 0; time.Now().Before(end); iter++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				outcome, ok := a.run(ctx, c, iter)
				cancel()
				record(a.name, outcome, ok)
				// paced, so the cheap refusals do not crowd the log and the CPU
				time.Sleep(time.Duration(100+rand.IntN(400)) * time.Millisecond)
			}
		}()
	}
}

// status posts body and labels the answer by its status and error code;
// ok when the status is one of want.
func (c *soakClient) status(ctx context.Context, path, body string, hdr map[string]string, want ...int) (string, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+path, strings.NewReader(body))
	if err != nil {
		return "error: " + err.Error(), false
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "error: " + err.Error(), false
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code *string } `json:"error"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	label := fmt.Sprint(resp.StatusCode)
	if json.Unmarshal(b, &e) == nil && e.Error.Code != nil {
		label += " " + *e.Error.Code
	}
	for _, w := range want {
		if resp.StatusCode == w {
			return label, true
		}
	}
	return label + ": " + strings.ReplaceAll(tail(string(b), 200), "\n", " "), false
}

// stalledReader opens a raw TCP connection with a small receive buffer,
// asks for a long stream (n = 6 and 20 logprobs a token: about 8 MB, more than
// the socket buffers and the server's queued output per request hold), reads its headers and then nothing
// for twice the server's write-stall timeout. The server must cut it (its
// slot and sequences freed): the rest of the stream, read afterwards, ends
// without [DONE], or (when the whole output fitted in the socket buffers)
// with it; the connection must not stay open with nothing coming.
func stalledReader(ctx context.Context, c *soakClient, iter int) (string, bool) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	host := strings.TrimPrefix(c.url, "http://")
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return "error: " + err.Error(), false
	}
	defer conn.Close()
	body := `{"prompt": "Once upon a time", "max_tokens": 700, "n": 6, "ignore_eos": true, "stream": true, "logprobs": 20}`
	fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body)
	r := bufio.NewReaderSize(conn, 512)
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	status, err := r.ReadString('\n')
	if err != nil {
		return "error: no status line: " + err.Error(), false
	}
	if !strings.Contains(status, " 200 ") {
		// under load a stream may be refused with 429; that is bounded too
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(io.LimitReader(r, 2048))
		return strings.TrimSpace(status) + ": " + strings.ReplaceAll(tail(string(b), 200), "\n", " "), strings.Contains(status, " 429 ")
	}
	select { // stop reading
	case <-time.After(2*soakStallTimeout + time.Duration(rand.IntN(1000))*time.Millisecond):
	case <-ctx.Done():
		return "cancelled", true
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	var rest []byte
	buf := make([]byte, 32<<10)
	for !strings.HasSuffix(string(rest), "\r\n0\r\n\r\n") { // the chunked body's end, or EOF
		n, err := r.Read(buf)
		rest = append(rest, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "connection still open a minute after the stall: " + err.Error(), false
		}
	}
	switch {
	case strings.Contains(string(rest), "data: [DONE]"):
		return "finished (fitted in the socket buffers)", true
	default:
		return "cut after the stall", true
	}
}
