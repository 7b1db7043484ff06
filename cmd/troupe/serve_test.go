package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/hub/hubtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// binDir holds the troupe binary the tests build (once per test binary).
var (
	binDir   string
	buildBin = sync.OnceValues(func() (string, error) {
		bin := filepath.Join(binDir, "troupe")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go build: %v\n%s", err, out)
		}
		return bin, nil
	})
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "troupe-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildTroupe builds the troupe binary once per test binary.
func buildTroupe(t *testing.T) string {
	t.Helper()
	bin, err := buildBin()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// serve starts `troupe serve args...` on a free port and returns its base
// URL and process; the test stops it.
func serve(t *testing.T, bin string, env []string, args ...string) (string, *exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--port", "0", "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var logs strings.Builder
	cmd.Stderr = &logs
	stdout := startProc(t, cmd)
	line := linesWith(stdout, "serving")
	select {
	case l := <-line:
		return regexp.MustCompile(`http://\S+`).FindString(l), cmd, &logs
	case <-time.After(2 * time.Minute): // a hang, not a slow machine
		t.Fatalf("troupe serve did not start in 2 minutes; stderr:\n%s", logs.String())
	}
	return "", nil, nil
}

// startProc starts cmd, killed when the test ends, and returns its stdout.
func startProc(t *testing.T, cmd *exec.Cmd) io.Reader {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return stdout
}

// linesWith sends r's lines that contain substr (r is read to its end).
func linesWith(r io.Reader, substr string) <-chan string {
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if strings.Contains(sc.Text(), substr) {
				line <- sc.Text()
			}
		}
	}()
	return line
}

// TestServe starts the real server, serves a completion, and shuts down
// gracefully on SIGTERM with exit status 0, letting a stream in flight end.
func TestServe(t *testing.T) {
	bin := buildTroupe(t)
	stories := testmodels.Path(t, "stories260K.gguf")
	const key = "sk-troupe-7f3a9c21"
	url, cmd, logs := serve(t, bin, nil, "-m", stories, "--api-key", key)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("serving on %s; with no --host, want 127.0.0.1 only", url)
	}
	metrics := func() string {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	req, _ := http.NewRequest(http.MethodPost, url+"/v1/completions",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 200, "ignore_eos": true, "stream": true}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Scan() // the first event: the stream is running
	if m := metrics(); strings.Contains(m, key) || !strings.Contains(m, "troupe:num_requests_running") {
		t.Errorf("/metrics shows the API key, or not the metrics:\n%s", m)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := false
	for sc.Scan() {
		done = done || sc.Text() == "data: [DONE]"
	}
	if !done {
		t.Error("the stream in flight did not finish during the graceful shutdown")
	}
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("exit: %v; stderr:\n%s", err, logs.String())
		}
	case <-time.After(2 * time.Minute): // a hang, not a slow machine
		t.Fatal("troupe serve did not exit in 2 minutes after SIGTERM")
	}
	// Structured logs: one JSON object per line, with the request logged.
	sawRequest := false
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Errorf("log line is not JSON: %q", l)
		}
		sawRequest = sawRequest || ev["path"] == "/v1/completions"
	}
	if !sawRequest {
		t.Errorf("no request logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), key) {
		t.Errorf("the API key is in the log:\n%s", logs.String())
	}
}

// TestShutdownCancels: with no grace period, SIGTERM cancels what is still
// running, and every request in flight is answered (a stream with an error
// event and [DONE], a plain request with a 503), never cut off; the process
// exits 0.
func TestShutdownCancels(t *testing.T) {
	bin := buildTroupe(t)
	url, cmd, logs := serve(t, bin, nil, "-m", testmodels.Path(t, "stories260K.gguf"), "--shutdown-grace", "0s")
	body := `{"prompt": "Once upon a time", "max_tokens": 480, "n": 8, "ignore_eos": true, "stream": %v}`
	started := make(chan struct{}, 2)
	type answer struct {
		status int
		body   string
		err    error
	}
	answers := make(chan answer, 2)
	for _, stream := range []bool{true, false} {
		go func() {
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(fmt.Sprintf(body, stream)))
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			if !stream {
				started <- struct{}{} // the head comes with the whole answer: count it as started at once
			}
			var b strings.Builder
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if stream && b.Len() == 0 {
					started <- struct{}{}
				}
				b.WriteString(sc.Text() + "\n")
			}
			answers <- answer{status: resp.StatusCode, body: b.String(), err: sc.Err()}
		}()
	}
	<-started
	// The plain request is in too: more than one request's 8 sequences
	// (polled, not a fixed sleep, which a loaded machine can outlast).
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		run, err1 := scrape(url, "troupe:num_requests_running")
		wait, err2 := scrape(url, "troupe:num_requests_waiting")
		if err1 == nil && err2 == nil && run+wait > 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the two requests are not both in after 2 minutes: %v running, %v waiting (%v %v)", run, wait, err1, err2)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cancelled := 0
	var seen []string
	for range 2 {
		a := <-answers
		seen = append(seen, fmt.Sprintf("status %d, %d bytes ending %q", a.status, len(a.body), a.body[max(len(a.body)-200, 0):]))
		switch {
		case a.err != nil:
			t.Errorf("a request in flight was cut off: %v", a.err)
		case strings.HasPrefix(a.body, "data: "): // the stream
			if !strings.HasSuffix(strings.TrimSpace(a.body), "data: [DONE]") {
				t.Errorf("the stream did not end with [DONE]:\n%s", a.body)
			}
			if strings.Contains(a.body, "shutting down") {
				cancelled++
			}
		case a.status == 503 && strings.Contains(a.body, "shutting down"):
			cancelled++
		case a.status != 200:
			t.Errorf("plain request: %d %s", a.status, a.body)
		}
	}
	if cancelled == 0 {
		t.Errorf("neither request was cancelled: %q", seen)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v; stderr:\n%s", err, logs.String())
	}
}

// TestServeHF serves hf://OWNER/REPO/FILE: downloaded once from a local hub
// into the cache, then served from the cache.
func TestServeHF(t *testing.T) {
	bin := buildTroupe(t)
	data := readFile(t, testmodels.Path(t, "stories260K.gguf"))
	h := hubtest.New(t, hubtest.Repo{ID: "karpathy/stories", Files: []hubtest.File{{Name: "stories260K.gguf", Data: data, LFS: true}}})
	env := []string{"HF_ENDPOINT=" + h.URL, "TROUPE_CACHE=" + t.TempDir()}
	for round := range 2 {
		url, cmd, logs := serve(t, bin, env, "-m", "hf://karpathy/stories/stories260K.gguf")
		resp, err := http.Get(url + "/v1/models")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("round %d: /v1/models: %v", round, err)
		}
		resp.Body.Close()
		_ = cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("round %d: exit %v\n%s", round, err, logs.String())
		}
	}
	if n := len(h.Transfers()); n != 1 {
		t.Errorf("%d transfers of the model; want 1 (the second run uses the cache)", n)
	}
}

// TestServeErrors: bad flags and models give one-line errors.
func TestServeErrors(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"serve", "--preemption", "sometimes"}, 2, "preemption"},
		{[]string{"serve", "--port", "70000"}, 2, "port"},
		{[]string{"serve", "-m", "/nonexistent/model.gguf"}, 1, "no such file"},
		{[]string{"serve", "-m", "hf://just-owner"}, 1, "hf://"},
		{[]string{"serve", "-m", stories, "--port", "0", "--cluster", "c"}, 2, "--advertise"},
		{[]string{"serve", "-m", stories, "--port", "0", "--cluster", "c", "--advertise", "127.0.0.1:1", "--provider", "zk"}, 2, "provider"},
		{[]string{"serve", "-m", stories, "--port", "0", "--cluster", "c", "--advertise", "127.0.0.1:1"}, 2, "automanaged"},
	} {
		_, stderr, code := troupe(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line mentioning %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
}
