package server_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/internal/promtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/tokenizer"
	"github.com/troupe-llm/troupe/server"
	"github.com/troupe-llm/troupe/server/servetest"
)

const modelName = "stories"

// fixture is a running server over stories260K with SmolLM2's chat template.
type fixture struct {
	url string
	rt  *actors.Runtime
	srv *server.Server
	m   *model.Model
}

// options tweak a fixture.
type options struct {
	rt       actors.Config
	srv      server.Config
	notReady bool
	logTo    io.Writer // the server's log at info level; nil: none
	noTmpl   bool
	// wrap, when set, wraps the device: a CPU backend of rt's NumBlocks,
	// BlockSize and NumHostBlocks (which must be set).
	wrap func(actors.Backend) actors.Backend
	// connState, when set, sees the server's connections (http.Server's
	// ConnState), to shape their sockets.
	connState func(net.Conn, http.ConnState)
	// model, when set, is the GGUF to serve instead of stories260K.
	model string
}

func newFixture(t testing.TB, o options) *fixture {
	t.Helper()
	path := o.model
	if path == "" {
		path = testmodels.Path(t, "stories260K.gguf")
	}
	m, err := model.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	sys := servetest.QuietSystem(t)
	if o.wrap != nil {
		be, err := backend.NewCPU(m, o.rt.NumBlocks, o.rt.BlockSize, o.rt.NumHostBlocks, 1)
		if err != nil {
			t.Fatal(err)
		}
		o.rt.Backends = []actors.Backend{o.wrap(be)}
	} else {
		o.rt.NewBackend = backend.For(m, backend.DeviceCPU)
	}
	rt, err := actors.Start(sys, m, o.rt)
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.srv
	if cfg.ModelName == "" {
		cfg.ModelName = modelName
	}
	cfg.Log = zerolog.Nop()
	if o.logTo != nil {
		cfg.Log = zerolog.New(o.logTo).Level(zerolog.InfoLevel)
	}
	if !o.noTmpl && cfg.ChatTemplate == "" {
		cfg.ChatTemplate = servetest.Template(t, servetest.SmolLM2)
	}
	srv, err := server.New(sys, rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := servetest.Listen(t, srv, rt, o.connState)
	if !o.notReady {
		srv.Ready()
	}
	return &fixture{url: url, rt: rt, srv: srv, m: m}
}

// parallel runs fn(0), ..., fn(n-1) at once and waits for them all.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

// nodeModules is the node_modules folder that holds the npm packages pkgs,
// all of which the test needs; it ends the test when one is missing.
func nodeModules(t *testing.T, pkgs ...string) string {
	t.Helper()
	for _, pkg := range pkgs[1:] {
		testmodels.NPMPackage(t, pkg)
	}
	return filepath.Dir(testmodels.NPMPackage(t, pkgs[0]))
}

// runNode runs script with node, the npm packages of mods and args, and
// decodes what it prints into got.
func runNode(t *testing.T, mods, script string, got any, args ...string) {
	t.Helper()
	out := testmodels.Node(t, mods, script, args...)
	if err := json.Unmarshal(out, got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// text decodes ids as the server streams them.
func (f *fixture) text(ids []int32) string {
	d := tokenizer.NewStreamDecoder(f.m.Tokenizer)
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(d.Add(id))
	}
	return b.String() + d.Flush()
}

// post sends a JSON body and returns the response (body read) .
func post(t testing.TB, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return roundTrip(t, req)
}

// roundTrip sends req and returns the response, its body read.
func roundTrip(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// metric reads one sample of the server's /metrics (promtest.Await).
func (f *fixture) metric(t testing.TB, name string) float64 {
	return promtest.Await(t, f.url, name)
}

// waitIdle waits until /metrics shows no sequence and every block free.
func (f *fixture) waitIdle(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // bounds a hang only
	for {
		run, wait := f.metric(t, "troupe:num_requests_running"), f.metric(t, "troupe:num_requests_waiting")
		usage := f.metric(t, "troupe:kv_cache_usage_perc")
		if run == 0 && wait == 0 && usage == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not idle: running %v waiting %v kv usage %v", run, wait, usage)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// refCase is one ../shared/reference/stories260K/caseN.json.
type refCase = *testmodels.Case

// loadCases are stories260K's first three reference cases, those with a
// comfortable greedy gap.
func loadCases(t testing.TB) []refCase { return testmodels.Cases(t, "stories260K")[:3] }
