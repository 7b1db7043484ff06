package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/server"
)

// TestLoRAModulesFlags: vLLM's --lora-modules in its forms (NAME=PATH,
// space-separated, JSON with base_model_name), --enable-lora (always on)
// and --max-lora-rank land; --max-loras is a one-line refusal naming it;
// --lora-modules with --lora is a usage error.
func TestLoRAModulesFlags(t *testing.T) {
	args := joinListArgs([]string{"--enable-lora", "--lora-modules", "a=/p/a.gguf", "b=/p/b.gguf", "--max-lora-rank", "64",
		"--lora-modules", `{"name":"c","path":"/p/c.gguf","base_model_name":"m"}`}, serveListFlags...)
	c, _, err := parseServeFS(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	want := []server.LoRAModule{{Name: "a", Path: "/p/a.gguf"}, {Name: "b", Path: "/p/b.gguf"}, {Name: "c", Path: "/p/c.gguf", Base: "m"}}
	if !slices.Equal(c.LoRAModules, want) || c.MaxLoRARank != 64 {
		t.Errorf("parsed %+v, rank %d", c.LoRAModules, c.MaxLoRARank)
	}
	for _, bad := range [][]string{{"--lora-modules", "a"}, {"--lora-modules", "=x"}, {"--lora-modules", `{"name":"a"}`},
		{"--lora-modules", `{"name":"a","path":"p","x":1}`}, {"--max-lora-rank", "0"}} {
		if _, _, err := parseServeFS(t, bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	var code int
	_, errOut := captureServe(t, &code, "--max-loras", "4")
	if code != 2 || !strings.Contains(errOut, "--max-loras (vLLM's flag) is not supported") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("--max-loras: exit %d, %q", code, errOut)
	}
	c, fs, _ := parseServeFS(t, "--lora-modules", "a=x.gguf", "--lora", "y.gguf")
	c.Models.given = flagsSet(fs)
	var ue usageError
	if err := c.validateModels(); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--lora-modules") {
		t.Errorf("--lora-modules with --lora: %v", err)
	}
	c, fs, _ = parseServeFS(t, "--lora-modules", "a=x.gguf", "--enable-lora-runtime")
	c.Models.given = flagsSet(fs)
	if err := c.validateModels(); err != nil {
		t.Errorf("--lora-modules with --enable-lora-runtime: %v", err)
	}
}

// captureServe runs serveCmd with args, returning its stdout and stderr as
// main prints them (a usage error's first line), and the exit code.
func captureServe(t *testing.T, code *int, args ...string) (string, string) {
	t.Helper()
	out, errOut, c := troupe(t, append([]string{"serve"}, args...)...)
	*code = c
	if i := strings.Index(errOut, "\nUsage"); i >= 0 {
		errOut = errOut[:i]
	}
	return out, errOut
}

// TestServeLoRAModules: `troupe serve -m M --lora-modules x=A y=B` (vLLM's
// launch line) serves x and y as model names: each one's greedy output is
// M's with lora [{id, 1}] (ids in name order), and M's own is unchanged by
// them; an adapter above --max-lora-rank stops the server at start.
func TestServeLoRAModules(t *testing.T) {
	model := testmodels.Path(t, "stories260K.gguf")
	var paths []string
	for i, rank := range []int{4, 8} {
		paths = append(paths, synthtest.LoRAFile(t, model, synth.LoRAOptions{Rank: rank, Alpha: float32(4 * rank), Seed: uint64(i + 1)}))
	}
	bin := buildTroupe(t)
	url, _, logs := serve(t, bin, nil, "-m", model, "--enable-lora", "--lora-modules", "y="+paths[1], "x="+paths[0], "--max-lora-rank", "8")
	complete := func(name, extra string) string {
		code, b := post(t, url+"/v1/completions", `{"model":"`+name+`","prompt":"Once upon a time","max_tokens":12,"temperature":0`+extra+`}`)
		var out struct{ Choices []struct{ Text string } }
		if code != 200 || json.Unmarshal(b, &out) != nil || len(out.Choices) != 1 {
			t.Fatalf("%s%s: %d %s\n%s", name, extra, code, b, logs)
		}
		return out.Choices[0].Text
	}
	base := complete("stories260K", "")
	x, y := complete("x", ""), complete("y", "")
	if x0, y1 := complete("stories260K", `,"lora":[{"id":0,"scale":1}]`), complete("stories260K", `,"lora":[{"id":1,"scale":1}]`); x != x0 || y != y1 {
		t.Errorf("x %q, the base with lora id 0 %q; y %q, with id 1 %q", x, x0, y, y1)
	}
	if x == base || y == base {
		t.Errorf("base %q, x %q, y %q: an adapter changed nothing", base, x, y)
	}
	if again := complete("stories260K", ""); again != base {
		t.Errorf("the base model after the adapters %q, before %q", again, base)
	}

	_, errOut, code := troupe(t, "serve", "--port", "0", "-m", model, "--lora-modules", "x="+paths[1], "--max-lora-rank", "4")
	if code == 0 || !strings.Contains(errOut, "--max-lora-rank 4") {
		t.Errorf("an adapter of rank 8 at --max-lora-rank 4: exit %d, %q", code, errOut)
	}
}
