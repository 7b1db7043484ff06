package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

func TestBenchEmbed(t *testing.T) {
	var out bytes.Buffer
	if err := benchEmbed([]string{"-m", testmodels.Path(t, "stories260K.gguf"), "-b", "1,3", "-n", "4", "-t", "1"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 3 && (f[1] == "1" || f[1] == "3") {
			rows++
		}
	}
	if rows != 2 || !strings.Contains(out.String(), "mean pooling") {
		t.Errorf("want a row per batch size and the pooling named:\n%s", out.String())
	}
	for _, args := range [][]string{nil, {"-m", "x", "-b", "0"}, {"-m", "x", "-n", "0"}} {
		if err := benchEmbed(args, io.Discard, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	out.Reset()
	if err := benchEmbed([]string{"--print-sentences"}, &out, io.Discard); err != nil || strings.Count(out.String(), "\n") != len(embedSentences) {
		t.Errorf("--print-sentences: %v, %d lines", err, strings.Count(out.String(), "\n"))
	}
}
