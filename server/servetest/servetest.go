// Package servetest runs troupe's HTTP server inside a test as `troupe
// serve` runs it: on an actor system that logs nothing, behind a loopback
// listener with the server's own timeouts, all of it stopped when the test
// ends. The tests of server, of its web page and of bench share it.
package servetest

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/server"
)

// SmolLM2 is the chat template the tests serve stories260K with.
const SmolLM2 = "HuggingFaceTB-SmolLM2-135M-Instruct.jinja"

// QuietSystem is an actor system that logs nothing, shut down when the
// test ends.
func QuietSystem(t testing.TB) *actor.ActorSystem {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

// Template is the test models' chat template templates/name.
func Template(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "templates", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Listen serves srv on a loopback port with the timeouts troupe serve runs
// with (srv.HTTPServer) and returns its URL; connState, when not nil, sees
// the connections (to shape their sockets). When the test ends the
// listener closes, then rt, srv's runtime, stops.
func Listen(t testing.TB, srv *server.Server, rt *actors.Runtime, connState func(net.Conn, http.ConnState)) string {
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv.HTTPServer()
	ts.Config.ConnState = connState
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		if err := rt.Stop(5 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return ts.URL
}
