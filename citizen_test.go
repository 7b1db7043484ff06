package troupe_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	zlog "github.com/rs/zerolog/log"
	"go.uber.org/goleak"

	"github.com/troupe-llm/troupe"
	"github.com/troupe-llm/troupe/internal/syncbuf"
	"github.com/troupe-llm/troupe/troupetest"
)

// globals is what a library must leave alone in its host.
type globals struct {
	families    []string // the default registry's metric families
	slogDefault *slog.Logger
	zLevel      zerolog.Level
	zLogger     zerolog.Logger
}

func readGlobals(t *testing.T) globals {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	g := globals{slogDefault: slog.Default(), zLevel: zerolog.GlobalLevel(), zLogger: zlog.Logger}
	for _, mf := range mfs {
		g.families = append(g.families, mf.GetName())
	}
	return g
}

// captureOutput points os.Stdout and os.Stderr at a pipe until the
// returned function is called, which restores them and returns what was
// written.
func captureOutput(t *testing.T) func() string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&buf, r); close(done) }()
	return func() string {
		os.Stdout, os.Stderr = stdout, stderr
		w.Close()
		<-done
		r.Close()
		return buf.String()
	}
}

// TestGoodCitizen: a program with its own HTTP server, Prometheus registry
// and logger opens a model, uses it through Chat, Embed and the mounted
// HTTP handler, and closes it. troupe's metrics appear on the program's
// registry only (and leave it on Close), its log lines go to the
// program's slog handler only, nothing is written to stdout or stderr, the
// default registry and the global loggers are unchanged, and no goroutine
// is left behind.
func TestGoodCitizen(t *testing.T) {
	path := tinyModel(t)
	noLeaksSince(t)
	before := readGlobals(t)
	output := captureOutput(t)

	reg := prometheus.NewRegistry()
	var logged syncbuf.Buffer
	m, err := troupe.Open(context.Background(), path, troupe.WithMetrics(reg), troupe.WithThreads(1),
		troupe.WithKVCacheBytes(4<<20), troupe.WithSlog(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		output()
		t.Fatal(err)
	}
	_, chatErr := m.Chat(context.Background(), &troupe.ChatRequest{Messages: user("Hi"), Sampling: troupe.Sampling{MaxTokens: troupe.Int(4)}})
	_, embedErr := m.Embed(context.Background(), "a text")
	mux := http.NewServeMux() // the program's own
	mux.Handle("/llm/", http.StripPrefix("/llm", m.Handler()))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/llm/v1/models", nil))
	open := familyNames(t, reg)
	closeErr := m.Close()
	closed := familyNames(t, reg)
	written := output()

	for _, err := range []error{chatErr, embedErr, closeErr} {
		if err != nil {
			t.Error(err)
		}
	}
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "tiny") {
		t.Errorf("GET /v1/models through the program's mux: %d %s", rec.Code, rec.Body)
	}
	if !slices.Contains(open, "troupe:num_requests_running") || !slices.Contains(open, "troupe:prompt_tokens_total") {
		t.Errorf("the program's registry has %v, want troupe's metrics", open)
	}
	if slices.ContainsFunc(open, func(n string) bool { return strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") }) {
		t.Errorf("the program's registry got Go or process collectors: %v", open)
	}
	if len(closed) != 0 {
		t.Errorf("after Close the program's registry still has %v", closed)
	}
	if !strings.Contains(logged.String(), `"path":"/v1/models"`) {
		t.Errorf("the program's slog handler got no request line:\n%s", logged.String())
	}
	if written != "" {
		t.Errorf("troupe wrote to stdout or stderr:\n%s", written)
	}
	after := readGlobals(t)
	if !slices.Equal(before.families, after.families) {
		t.Errorf("the default registry changed: %v, then %v", before.families, after.families)
	}
	if before.slogDefault != after.slogDefault || before.zLevel != after.zLevel || !reflect.DeepEqual(before.zLogger, after.zLogger) {
		t.Error("a global logger changed (slog.Default, zerolog's global level or zerolog/log.Logger)")
	}
}

// TestMetricsNotRegisteredByDefault: without WithMetrics, no registry of
// the program's sees troupe's metrics.
func TestMetricsNotRegisteredByDefault(t *testing.T) {
	before := readGlobals(t)
	open(t, tinyModel(t))
	if after := readGlobals(t); !slices.Equal(before.families, after.families) {
		t.Errorf("the default registry changed: %v, then %v", before.families, after.families)
	}
}

// TestCloseInFlight: Close with a generation in flight returns, frees
// everything, and the generation ends: cancelled (an error), or complete
// when the runtime had finished it before Close; it never hangs.
func TestCloseInFlight(t *testing.T) {
	path := tinyModel(t)
	noLeaksSince(t)
	script := troupetest.NewScript(troupetest.TinyVocabSize, troupetest.TinyEOS)
	m, err := troupe.Open(context.Background(), path, troupe.WithBackend(script))
	if err != nil {
		t.Fatal(err)
	}
	if err := script.PushText(m.Runtime(), strings.Repeat("word ", 300)); err != nil {
		t.Fatal(err)
	}
	started, closed := make(chan struct{}), make(chan struct{})
	type result struct {
		resp *troupe.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var once sync.Once
		resp, err := m.ChatStream(context.Background(), &troupe.ChatRequest{Messages: user("Hi")}, func(troupe.Delta) error {
			once.Do(func() { close(started); <-closed }) // hold the reader until Close has returned
			return nil
		})
		done <- result{resp, err}
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("the generation ended before its first piece: %v", r.err)
	}
	if err := m.Close(); err != nil {
		t.Error(err)
	}
	close(closed)
	if r := <-done; r.err == nil && (r.resp == nil || r.resp.Finish == "") {
		t.Errorf("a generation cut off by Close returned no error and no finish: %+v", r.resp)
	}
	if err := m.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, err := m.Chat(context.Background(), &troupe.ChatRequest{Messages: user("Hi")}); !errors.Is(err, troupe.ErrUnavailable) {
		t.Errorf("Chat after Close: %v, want ErrUnavailable", err)
	}
}

// noLeaksSince fails the test, at its end, if a goroutine started after
// this call still runs 30 s after the test (goleak's own retries give up
// after about a second, short for a loaded machine). Call it first, so its
// cleanup runs last.
func noLeaksSince(t *testing.T) {
	t.Helper()
	base := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			err := goleak.Find(base)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("goroutines outlived Close: %v", err)
				return
			}
		}
	})
}

func familyNames(t *testing.T, g prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	return names
}
