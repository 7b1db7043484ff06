package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// TestServeModelsFlags: the several-models flags land in their fields,
// $OLLAMA_KEEP_ALIVE and $VLLM_ALLOW_RUNTIME_LORA_UPDATING fill what the
// flags leave, and each combination that cannot work is a usage error
// naming its flag.
func TestServeModelsFlags(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	c, fs, err := parseServeFS(t, "--models-dir", "d", "--models-max", "2", "--no-models-autoload", "--keep-alive", "1m")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Models.fromEnv(env(map[string]string{"OLLAMA_KEEP_ALIVE": "10s", "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}), flagsSet(fs)); err != nil {
		t.Fatal(err)
	}
	if m := c.Models; m.Dir != "d" || m.Max != 2 || !m.NoAutoload || m.KeepAlive != time.Minute || !m.RuntimeLoRA {
		t.Errorf("parsed %+v", m)
	}
	c, fs, _ = parseServeFS(t, "--models-dir", "d")
	if err := c.Models.fromEnv(env(map[string]string{"OLLAMA_KEEP_ALIVE": "30"}), flagsSet(fs)); err != nil || c.Models.KeepAlive != 30*time.Second {
		t.Errorf("$OLLAMA_KEEP_ALIVE 30: %v %v", c.Models.KeepAlive, err)
	}
	if err := c.Models.fromEnv(env(map[string]string{"OLLAMA_KEEP_ALIVE": "soon"}), flagsSet(fs)); err == nil {
		t.Error("$OLLAMA_KEEP_ALIVE soon: no error")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--models-dir", "d", "--models-max", "0"}, "--max-loaded-models"},
		{[]string{"--models-dir", "d", "--cluster", "c"}, "--cluster"},
		{[]string{"--models-dir", "d", "--lora", "a.gguf"}, "--lora"},
		{[]string{"--models-dir", "d", "--served-model-name", "x"}, "--served-model-name"},
		{[]string{"--models-max", "2"}, "--models-max"},
		{[]string{"--keep-alive", "1m"}, "--keep-alive"},
		{[]string{"--enable-lora-runtime"}, "--enable-lora-runtime"},
	} {
		c, fs, err := parseServeFS(t, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		c.Models.given = flagsSet(fs)
		err = c.validateModels()
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error naming %s", tc.args, err, tc.want)
		}
	}
}

func parseServeFS(t *testing.T, args ...string) (*serveConfig, *flag.FlagSet, error) {
	t.Helper()
	var c serveConfig
	fs := newFlags("serve", io.Discard)
	c.register(fs)
	return &c, fs, parse(fs, args)
}

// TestServeModelsQueueFlag: --models-queue (default 512, Ollama's) lands in
// its field, $OLLAMA_MAX_QUEUE fills it when the flag is not given (0 turns
// the queue off), and a negative one, a bad $OLLAMA_MAX_QUEUE or the flag
// without --models-dir is one line and exit 2.
func TestServeModelsQueueFlag(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, tc := range []struct {
		args []string
		env  string
		want int
	}{
		{[]string{"--models-dir", "d"}, "", 512},
		{[]string{"--models-dir", "d", "--models-queue", "3"}, "", 3},
		{[]string{"--models-dir", "d"}, "7", 7},
		{[]string{"--models-dir", "d"}, "0", 0},
		{[]string{"--models-dir", "d", "--models-queue", "3"}, "7", 3},
	} {
		c, fs, err := parseServeFS(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Models.fromEnv(env(map[string]string{"OLLAMA_MAX_QUEUE": tc.env}), flagsSet(fs)); err != nil || c.Models.Queue != tc.want {
			t.Errorf("%v, $OLLAMA_MAX_QUEUE %q: queue %d, %v; want %d", tc.args, tc.env, c.Models.Queue, err, tc.want)
		}
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--models-dir", dir, "--models-queue", "-1"}, "", "--models-queue -1: want 0 (no queue) or more"},
		{[]string{"--models-dir", dir, "--models-queue", "many"}, "", "--models-queue"},
		{[]string{"--models-dir", dir}, "-2", `$OLLAMA_MAX_QUEUE "-2"`},
		{[]string{"--models-queue", "2"}, "", "--models-queue needs --models-dir"},
	} {
		t.Setenv("OLLAMA_MAX_QUEUE", tc.env)
		wantUsage(t, tc.want, append([]string{"serve"}, tc.args...)...)
	}
}
