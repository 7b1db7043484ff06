package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestBenchBatched runs `troupe bench batched` with tiny sizes: the table
// has llama-batched-bench's header and one row per batch size, then the
// footnote and the overhead table; --output json gives one object a row.
func TestBenchBatched(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	args := []string{"bench", "batched", "-m", stories, "-npp", "8", "-ntg", "4", "-npl", "1,2"}
	out := troupeOK(t, args...)
	wantReport(t, out,
		"|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n",
		"|     8 |      4 |    1 |     12 |",
		"|     8 |      4 |    2 |     24 |",
		"S_TG = B*(TG-1)/T_TG",
		"|    B | steps |  step ms | forward ms | overhead ms | overhead % |\n",
		"|    1 |     3 |",
		"|    2 |     3 |",
	)

	out, errOut, code := troupe(t, append(args, "--output", "json")...)
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("json: %d lines, want 2:\n%s", len(lines), out)
	}
	for i, line := range lines {
		var row struct {
			PP           int     `json:"pp"`
			TG           int     `json:"tg"`
			PL           int     `json:"pl"`
			NKV          int     `json:"n_kv"`
			TPP          float64 `json:"t_pp"`
			SpeedTG      float64 `json:"speed_tg"`
			DecodeSteps  int     `json:"decode_steps"`
			DecodeStepMs float64 `json:"decode_step_ms"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("json line %d: %v: %s", i, err, line)
		}
		b := i + 1
		if row.PP != 8 || row.TG != 4 || row.PL != b || row.NKV != b*12 || row.DecodeSteps != 3 ||
			!(row.TPP > 0) || !(row.SpeedTG > 0) || !(row.DecodeStepMs > 0) {
			t.Errorf("json line %d: %s", i, line)
		}
	}
}

// TestBenchUsage: bad flags are one-line usage errors with exit status 2.
func TestBenchUsage(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no benchmark", []string{"bench"}, "want a benchmark"},
		{"unknown benchmark", []string{"bench", "fast"}, `unknown benchmark "fast"`},
		{"no model", []string{"bench", "batched"}, "-m MODEL is required"},
		{"bad batch sizes", []string{"bench", "batched", "-m", stories, "-npl", "1,x"}, `-npl "1,x"`},
		{"zero batch size", []string{"bench", "batched", "-m", stories, "-npl", "0"}, "not a positive integer"},
		{"one token", []string{"bench", "batched", "-m", stories, "-ntg", "1"}, "-ntg 1"},
		{"no prompt", []string{"bench", "batched", "-m", stories, "-npp", "0"}, "-npp 0"},
		{"short context", []string{"bench", "batched", "-m", stories, "-c", "100"}, "-c 100"},
		{"no threads", []string{"bench", "batched", "-m", stories, "-t", "0"}, "-t"},
		{"bad output", []string{"bench", "batched", "-m", stories, "--output", "xml"}, "--output"},
		{"stray argument", []string{"bench", "batched", "-m", stories, "extra"}, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := troupe(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errOut)
			}
			if !strings.HasPrefix(errOut, "troupe bench: ") || !strings.Contains(errOut, tc.msg) ||
				strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("stderr %q: want one line, troupe bench: ... %s", errOut, tc.msg)
			}
		})
	}
	// An unknown flag: one line with a hint, not the list of flags.
	_, errOut, code := troupe(t, "bench", "batched", "-m", stories, "-npl", "1", "-bogus")
	if want := "troupe bench: unknown flag --bogus (see troupe bench batched --help)\n"; code != 2 || errOut != want {
		t.Errorf("unknown flag: exit %d, stderr %q; want 2, %q", code, errOut, want)
	}
}

// TestBenchBatchedSchema: --json-schema measures each batch size twice,
// unconstrained then under the schema, and compares them with the masks'
// cost: one mask per generated token.
func TestBenchBatchedSchema(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	args := []string{"bench", "batched", "-m", stories, "-npp", "8", "-ntg", "6", "-npl", "2", "--json-schema", "../../bench/testdata/inventory.schema.json"}
	out := troupeOK(t, args...)
	wantReport(t, out,
		"|     8 |      6 |    2 |     28 |",
		"| schema\n",
		"|    B | S_TG free t/s | S_TG schema t/s | ratio | compile ms | vocab ms |  masks | cache hits | µs per mask |\n",
		"|    2 |",
		"|     12 |", // masks: 2 sequences x 6 tokens
	)
	if _, errOut, code := troupe(t, append(args[:len(args)-1], "no-such.json")...); code == 0 || !strings.Contains(errOut, "--json-schema") {
		t.Errorf("a missing schema file: exit %d: %s", code, errOut)
	}
}

// TestBenchOutputFlag: every bench subcommand takes -o and --output (text
// or json); bench model shows the parameters of a small model; an error
// of package bench says "bench:" once.
func TestBenchOutputFlag(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	url := fakeOpenAI(t, false)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"model", []string{"bench", "model", "-m", stories, "-p", "8", "-n", "4", "-r", "1"}},
		{"batched", []string{"bench", "batched", "-m", stories, "-npp", "8", "-ntg", "4", "-npl", "1"}},
		{"serve", []string{"bench", "serve", "--url", url, "--num-prompts", "2", "--input-len", "2", "--output-len", "2"}},
	} {
		for _, flag := range []string{"-o", "--output"} {
			out, errOut, code := troupe(t, append(tc.args, flag, "json")...)
			if code != 0 {
				t.Fatalf("%s %s json: exit %d: %s", tc.name, flag, code, errOut)
			}
			var v any
			if err := json.NewDecoder(strings.NewReader(out)).Decode(&v); err != nil {
				t.Errorf("%s %s json: not JSON: %v\n%s", tc.name, flag, err, out)
			}
			_, errOut, code = troupe(t, append(tc.args, flag, "xml")...)
			if code != 2 || !strings.Contains(errOut, `--output "xml"`) {
				t.Errorf("%s %s xml: exit %d, %q", tc.name, flag, code, errOut)
			}
		}
	}
	out, errOut, code := troupe(t, "bench", "model", "-m", stories, "-p", "8", "-n", "0", "-r", "1", "-o", "text")
	if code != 0 || !strings.Contains(out, "|     0.29 M |") {
		t.Errorf("bench model: exit %d, %s\n%s; want 0.29 M parameters", code, errOut, out)
	}
	if got, want := paramCount(1_100_048_384), "1.10 B"; got != want {
		t.Errorf("paramCount: %q, want %q", got, want)
	}
	_, errOut, code = troupe(t, "bench", "serve", "--url", "http://127.0.0.1:1", "--num-prompts", "1", "-o", "json")
	if code != 1 || strings.Count(errOut, "bench:") != 1 || !strings.HasPrefix(errOut, "troupe bench: ") {
		t.Errorf("bench serve error: exit %d, %q; want \"bench:\" once", code, errOut)
	}
}
