package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestVersion: --version names the version, commit, Go version and the
// kernels' ISA; the -ldflags values win over the build info, which wins
// over nothing; the Makefile sets the variables the binary has.
func TestVersion(t *testing.T) {
	out, _, code := troupe(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "troupe ") || !strings.Contains(out, runtime.Version()) || !strings.Contains(out, "kernels ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	info := &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		ver, rev         string
		bi               *debug.BuildInfo
		wantVer, wantRev string
	}{
		{"v1.0.0", "f00d", info, "v1.0.0", "f00d"},
		{"", "", info, "v0.4.0", "abc-dirty"},
		{"", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, "dev", "abc"},
		{"", "", nil, "dev", "unknown"},
	} {
		v := versionOf(tc.ver, tc.rev, tc.bi)
		if v.Version != tc.wantVer || v.Commit != tc.wantRev || v.GoVersion != runtime.Version() || v.ISA == "" {
			t.Errorf("versionOf(%q, %q): %+v; want %s, %s", tc.ver, tc.rev, v, tc.wantVer, tc.wantRev)
		}
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	b, err := exec.Command("make", "-s", "-n", "-C", "../..", "build", "VERSION=v9", "COMMIT=c0ffee").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, b)
	}
	_ = version // the names the Makefile sets
	_ = commit
	if s := string(b); !strings.Contains(s, "-X main.version=v9") || !strings.Contains(s, "-X main.commit=c0ffee") {
		t.Errorf("make build does not set main.version and main.commit: %s", s)
	}
}

// TestFlagUsage: -h lists the flags as the README writes them (-c,
// --port); a bad flag is one line with a hint, for every command.
func TestFlagUsage(t *testing.T) {
	_, errOut, code := troupe(t, "serve", "--help")
	if code != 0 || !strings.Contains(errOut, "\n  --port int\n") || !strings.Contains(errOut, "\n  -c int\n") || strings.Contains(errOut, "\n  -port") {
		t.Errorf("serve --help: exit %d\n%s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--foo"}, "troupe serve: unknown flag --foo (see troupe serve --help)\n"},
		{[]string{"serve", "-foo=1"}, "troupe serve: unknown flag --foo (see troupe serve --help)\n"},
		{[]string{"run", "--bar"}, "troupe run: unknown flag --bar (see troupe run --help)\n"},
		{[]string{"serve", "--port", "x"}, "troupe serve: invalid value \"x\" for flag --port: parse error (see troupe serve --help)\n"},
		{[]string{"serve", "--temp", "hot"}, "troupe serve: invalid value \"hot\" for flag --temp: want a number (see troupe serve --help)\n"},
		{[]string{"serve", "-m"}, "troupe serve: flag needs an argument: -m (see troupe serve --help)\n"},
		{[]string{"bench", "model", "--nope"}, "troupe bench: unknown flag --nope (see troupe bench model --help)\n"},
		{[]string{"serve", "stray"}, "troupe serve: unexpected argument \"stray\" (see troupe serve --help)\n"},
	} {
		out, errOut, code := troupe(t, tc.args...)
		if code != 2 || errOut != tc.want || out != "" {
			t.Errorf("%q: exit %d, stderr %q; want 2, %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestServeRefuses: settings that cannot work stop serve at startup with
// one line and exit status 2; a missing model is said as such, whatever
// the template.
func TestServeRefuses(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf") // a context of 2048
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-c", "4096"}, 2, "-c 4096 is beyond the model's context of 2048 tokens"},
		{[]string{"--num-kv-blocks", "1"}, 2, "--num-kv-blocks 1 holds 16 tokens, less than one context of 2048"},
		{[]string{"-c", "256", "--num-kv-blocks", "15"}, 2, "want at least 16 blocks"},
		{[]string{"--block-size", "0"}, 2, "--block-size 0"},
		{[]string{"--max-num-seqs", "-1"}, 2, "must not be negative"},
		{[]string{"--responses-max-age", "-1s"}, 2, "--responses-max and --responses-max-age must not be negative"},
		{[]string{"--swap-blocks", "8"}, 2, "--swap-blocks needs --preemption swap"},
		{[]string{"--temp", "3"}, 2, "--temp 3: want a number in [0, 2]"},
		{[]string{"--top-p", "0"}, 2, "--top-p 0"},
		{[]string{"--top-k", "-2"}, 2, "--top-k -2"},
		{[]string{"--chat-template", "chatmx"}, 2, `--chat-template "chatmx": no such file, and no built-in template of that name (chatml,`},
		{[]string{"--chat-template", "/nope/t.jinja"}, 1, "--chat-template: open /nope/t.jinja"},
	} {
		args := append([]string{"serve", "-m", stories, "--port", "0", "--device", "cpu"}, tc.args...)
		_, errOut, code := troupe(t, args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%q: exit %d, stderr %q; want %d and one line with %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
	_, errOut, code := troupe(t, "serve", "-m", "/nope/models/m.gguf", "--chat-template", "/nope/models/templates/t.jinja", "--port", "0")
	if code != 1 || !strings.Contains(errOut, "model /nope/models/m.gguf") || strings.Contains(errOut, "template") {
		t.Errorf("missing model and template folder: exit %d, %q; want the model named, not the template", code, errOut)
	}
}

// goServe runs c.serve(ctx) in a goroutine: serving gets its first
// "troupe: serving" line, done what it returns.
func goServe(ctx context.Context, c *serveConfig) (serving <-chan string, done <-chan error) {
	lines := make(chan string, 1)
	var once sync.Once
	out := writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), "troupe: serving") {
			once.Do(func() { lines <- string(p) })
		}
		return len(p), nil
	})
	errc := make(chan error, 1)
	go func() { errc <- c.serve(ctx, out, io.Discard) }()
	return lines, errc
}

// startServe runs serve in this process until the test ends and returns
// the summary line and the URL.
func startServe(t *testing.T, args ...string) (summaryLine, url string, stop func()) {
	t.Helper()
	c := validServe(t, append([]string{"--device", "cpu", "--log-format", "json"}, args...)...)
	ctx, cancel := context.WithCancel(context.Background())
	lines, done := goServe(ctx, c)
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	select {
	case l := <-lines:
		t.Cleanup(func() {
			select {
			case <-ctx.Done():
			default:
				stop()
			}
		})
		return strings.TrimSpace(l), regexp.MustCompile(`http://\S+`).FindString(l), stop
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(2 * time.Minute): // a hang, not a slow machine
		t.Fatal("serve did not start in 2 minutes")
	}
	return "", "", nil
}

// post sends body as JSON to url and returns the answer's status and body.
func post(t testing.TB, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestServeFirstRun: one summary line once serving; a built-in template by
// name; chatml for a model without a template; serve's sampling flags as
// request defaults.
func TestServeFirstRun(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	line, url, _ := startServe(t, "-m", stories, "--temp", "0", "-c", "512", "-t", "1")
	re := regexp.MustCompile(`^troupe: serving stories260K on http://127\.0\.0\.1:\d+ \(llama, 0\.29 M params, F32 weights; context 512 of 2048; ` +
		`KV cache \d+ blocks, [\d.]+ MiB f16; 1 threads on cpu \(\w+, \w+/\w+\); loaded in \S+\)$`)
	if !re.MatchString(line) {
		t.Errorf("summary %q\ndoes not match %s", line, re)
	}
	chat := func(url string) (int, string) {
		code, b := post(t, url+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}`)
		var r struct {
			Choices []struct{ Message struct{ Content string } } `json:"choices"`
		}
		json.Unmarshal(b, &r)
		if len(r.Choices) != 1 {
			return code, string(b)
		}
		return code, r.Choices[0].Message.Content
	}
	// stories260K has no template: chatml, and greedy (--temp 0), so two
	// requests agree.
	code, a := chat(url)
	if _, b := chat(url); code != 200 || a != b {
		t.Errorf("chat with the fallback template and --temp 0: %d %q, then %q", code, a, b)
	}
	tok := func(url string) string {
		_, b := post(t, url+"/tokenize", `{"messages": [{"role": "user", "content": "Hi"}]}`)
		return string(b)
	}
	chatml := tok(url)
	_, url2, _ := startServe(t, "-m", stories, "--chat-template", "llama3", "-c", "512", "-t", "1")
	if llama3 := tok(url2); llama3 == chatml || !strings.Contains(llama3, `"tokens"`) {
		t.Errorf("--chat-template llama3 renders as the fallback: %s", llama3)
	}
}

// TestServeDrains: on shutdown, a request arriving while another finishes
// gets 503 with Retry-After (not a refused connection), and the one in
// flight completes.
//
// The client of the request in flight (4 x 2000 tokens, a 4 KiB receive
// buffer) stops reading after its first line until the test has its 503,
// which stalls the stream once the socket buffers are full (checked with
// the test 10 s late); were they to hold all of it, the server could
// finish it and close its listener before the test's request got there. The client cannot tell such a miss from a server that refuses
// while a request is in flight, so a refusal runs the test again on a
// fresh server, and three refusals fail it.
func TestServeDrains(t *testing.T) {
	for try := 1; ; try++ {
		if !serveDrains(t) {
			return
		}
		if try == 3 {
			t.Fatal("in 3 tries, a request sent while draining was refused each time; want 503")
		}
		t.Logf("try %d: a request sent while draining was refused (the request in flight may have ended first); again", try)
	}
}

// serveDrains is one try of TestServeDrains; missed reports that a request
// sent while draining was refused.
func serveDrains(t *testing.T) (missed bool) {
	stories := testmodels.Path(t, "stories260K.gguf")
	_, url, stop := startServe(t, "-m", stories, "--shutdown-grace", "10m", "--write-stall-timeout", "10m", "-c", "2048", "-t", "1")
	done := make(chan string, 1)
	started, resume := make(chan struct{}), make(chan struct{})
	resumeOnce := sync.OnceFunc(func() { close(resume) })
	defer resumeOnce() // also when the test fails: the server then drains
	go func() {
		// A small receive buffer, so that the socket holds little of the stream.
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
				return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			}}
			return d.DialContext(ctx, network, addr)
		}
		cl := &http.Client{Transport: &http.Transport{DialContext: dial}}
		resp, err := cl.Post(url+"/v1/completions", "application/json",
			strings.NewReader(`{"prompt": "Once", "max_tokens": 2000, "ignore_eos": true, "stream": true, "n": 4}`))
		if err != nil {
			done <- err.Error()
			close(started)
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var last string
		for sc.Scan() {
			if last == "" {
				close(started)
				<-resume
			}
			if sc.Text() != "" {
				last = sc.Text()
			}
		}
		done <- last
	}()
	<-started
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	deadline := time.Now().Add(2 * time.Minute) // a hang, not a slow machine
	for {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "Hi", "max_tokens": 1}`))
		if err != nil { // refused: a miss, or a server that does not drain
			t.Logf("while draining: %v; want 503", err)
			missed = true
			break
		}
		resp.Body.Close()
		if resp.StatusCode == 503 {
			if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 1 {
				t.Errorf("503 without Retry-After: %v", resp.Header)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d after 2 minutes of draining", resp.StatusCode)
		}
		time.Sleep(5 * time.Millisecond)
	}
	resumeOnce()
	if last := <-done; last != "data: [DONE]" {
		t.Errorf("the request in flight ended with %q", last)
	}
	<-stopped
	return missed
}

// TestMakeRun: make run serves on PORT and HOST; with no model it says so.
func TestMakeRun(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	stories := testmodels.Path(t, "stories260K.gguf")
	b, err := exec.Command("make", "-s", "-C", "../..", "run", "MODEL=/nope/m.gguf").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "make run: no model at /nope/m.gguf") {
		t.Errorf("make run without a model: %v\n%s", err, b)
	}
	port := freePort(t)
	cmd := exec.Command("make", "-s", "-C", "../..", "run", "MODEL="+stories, "PORT="+strconv.Itoa(port), "HOST=127.0.0.1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		cmd.Wait()
	}()
	line := linesWith(stdout, "serving")
	select {
	case l := <-line:
		if want := "on http://127.0.0.1:" + strconv.Itoa(port) + " "; !strings.Contains(l, want) {
			t.Errorf("make run PORT=%d: %q", port, l)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("make run did not serve")
	}
}
