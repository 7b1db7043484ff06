package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/server"
)

// parseServe parses serve's flags into a config, as serveCmd does.
func parseServe(t *testing.T, args ...string) (*serveConfig, error) {
	t.Helper()
	c, _, err := parseServeFS(t, args...)
	return c, err
}

// validServe is parseServe of args that must parse and validate, on a
// free port.
func validServe(t *testing.T, args ...string) *serveConfig {
	t.Helper()
	c, err := parseServe(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	c.Port = freePort(t)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServeFlags: each flag lands in its field, with the defaults serve has
// always had.
func TestServeFlags(t *testing.T) {
	defaults := serveConfig{
		Host: "127.0.0.1", Port: 8080, Preemption: "recompute", Device: "auto", LogFormat: "auto", ShutdownGrace: 30 * time.Second,
		Runtime: actors.Config{Workers: 2, Devices: 1, BlockSize: 16},
		Server:  server.Config{MaxQueue: 256, RequestTimeout: 10 * time.Minute, WriteStallTimeout: 30 * time.Second},
		Cluster: cluster.Config{Provider: "automanaged", Etcd: []string{"127.0.0.1:2379"}},
		Models:  modelsConfig{Max: 4, Queue: 512, KeepAlive: 5 * time.Minute},
	}
	for _, tc := range []struct {
		args []string
		edit func(c *serveConfig)
	}{
		{nil, func(*serveConfig) {}},
		{[]string{"--responses-max", "10", "--responses-max-age", "5m"}, func(c *serveConfig) {
			c.Server.Responses.MaxResponses, c.Server.Responses.MaxAge = 10, 5*time.Minute
		}},
		{[]string{"-m", "x.gguf", "--cache-dir", "/c", "--host", "0.0.0.0", "--port", "0", "--chat-template", "t.jinja",
			"--log-format", "json", "--shutdown-grace", "1s", "--preemption", "swap"}, func(c *serveConfig) {
			c.Model, c.CacheDir, c.Host, c.Port, c.ChatTemplateFile = "x.gguf", "/c", "0.0.0.0", 0, "t.jinja"
			c.LogFormat, c.ShutdownGrace, c.Preemption = "json", time.Second, "swap"
		}},
		{[]string{"-t", "4", "--devices", "2", "--device", "cpu", "--max-num-seqs", "8", "--max-num-batched-tokens", "256",
			"-c", "1024", "--num-kv-blocks", "100", "--block-size", "32", "--swap-blocks", "50", "--no-prefix-caching"}, func(c *serveConfig) {
			c.Device = "cpu"
			c.Runtime = actors.Config{Workers: 4, Devices: 2, MaxNumSeqs: 8, MaxNumBatchedTokens: 256,
				MaxModelLen: 1024, NumBlocks: 100, BlockSize: 32, NumHostBlocks: 50, NoPrefixCaching: true}
		}},
		{[]string{"--api-key", "k", "--served-model-name", "n", "--max-queue", "-1", "--pprof", "--request-timeout", "0",
			"--tool-call-parser", "hermes", "--no-webui"}, func(c *serveConfig) {
			c.Server = server.Config{APIKey: "k", ModelName: "n", MaxQueue: -1, Pprof: true, ToolCallParser: "hermes", NoWebUI: true,
				WriteStallTimeout: 30 * time.Second}
		}},
		{[]string{"--cluster", "c", "--provider", "etcd", "--etcd", "a:1, b:2,", "--advertise", "h:3", "--automanaged-port", "4",
			"--seeds", "s:5,t:6"}, func(c *serveConfig) {
			c.Cluster = cluster.Config{Name: "c", Provider: "etcd", Etcd: []string{"a:1", "b:2"}, Advertise: "h:3",
				AutoManagedPort: 4, Seeds: []string{"s:5", "t:6"}}
		}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := parseServe(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults
			want.Cluster.Etcd = append([]string(nil), defaults.Cluster.Etcd...)
			tc.edit(&want)
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("parsed\n%+v\nwant\n%+v", *got, want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestServeFromEnv(t *testing.T) {
	env := map[string]string{"TROUPE_MODEL": "env.gguf", "TROUPE_API_KEY": "env-key"}
	for _, tc := range []struct {
		args             []string
		env              map[string]string
		wantModel, wantK string
	}{
		{nil, env, "env.gguf", "env-key"},
		{[]string{"-m", "flag.gguf", "--api-key", "flag-key"}, env, "flag.gguf", "flag-key"},
		{nil, nil, DefaultModel, ""},
	} {
		c, err := parseServe(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		c.fromEnv(func(k string) string { return tc.env[k] })
		if c.Model != tc.wantModel || c.Server.APIKey != tc.wantK {
			t.Errorf("%v: model %q, key %q; want %q, %q", tc.args, c.Model, c.Server.APIKey, tc.wantModel, tc.wantK)
		}
	}
}

// TestServeValidate: each bad setting is a usage error naming its flag.
func TestServeValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--preemption", "sometimes"}, "--preemption"},
		{[]string{"--port", "70000"}, "--port"},
		{[]string{"--port", "-1"}, "--port"},
		{[]string{"-t", "0"}, "-t"},
		{[]string{"--devices", "0"}, "--devices"},
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--device", "tpu"}, "--device"},
		{[]string{"--shutdown-grace", "-1s"}, "--shutdown-grace"},
		{[]string{"--request-timeout", "-1s"}, "--request-timeout"},
		{[]string{"--tool-call-parser", "pythonic_v9"}, "--tool-call-parser"},
		{[]string{"--cluster", "c"}, "advertise"},
		{[]string{"--cluster", "c", "--advertise", "127.0.0.1:1", "--provider", "zk"}, "provider"},
		{[]string{"--role", "decode"}, "--role"},
		{[]string{"--disagg-tokens", "64"}, "--disagg-tokens"},
		{[]string{"--cluster", "c", "--advertise", "127.0.0.1:1", "--automanaged-port", "2", "--seeds", "127.0.0.1:2", "--role", "encode"}, "--role"},
		{[]string{"--cluster", "c", "--advertise", "127.0.0.1:1", "--automanaged-port", "2", "--seeds", "127.0.0.1:2", "--disagg-tokens", "-1"}, "--disagg-tokens"},
	} {
		c, err := parseServe(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate()
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: Validate() = %v; want a usage error mentioning %q", tc.args, err, tc.want)
		}
	}
}

// TestServeClosesListener: serve gives its port back however it returns:
// a model that does not load, or a drain after ctx ends.
func TestServeClosesListener(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(bad, []byte("not a gguf file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, model string
		wantErr     bool
	}{
		{"model fails to load", bad, true},
		{"drained", testmodels.Path(t, "stories260K.gguf"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validServe(t, "-m", tc.model, "--device", "cpu", "--shutdown-grace", "0s", "--log-format", "json")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			serving, done := goServe(ctx, c)
			var err error
			select {
			case err = <-done:
			case <-serving:
				if conn, err := net.Dial("tcp", net.JoinHostPort(c.Host, strconv.Itoa(c.Port))); err != nil {
					t.Errorf("serving, but its port refuses: %v", err)
				} else {
					conn.Close()
				}
				cancel()
				err = <-done
			case <-time.After(2 * time.Minute): // a hang, not a slow machine
				t.Fatal("serve neither failed nor served in 2 minutes")
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("serve: %v; want an error %v", err, tc.wantErr)
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(c.Host, strconv.Itoa(c.Port)))
			if err != nil {
				t.Fatalf("after serve returned, its port is still taken: %v", err)
			}
			ln.Close()
		})
	}
}

// freePort returns a port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
