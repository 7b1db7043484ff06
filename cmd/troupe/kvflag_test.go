package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestKVCacheTypeFlag: --kv-cache-type takes f16 and q8_0 on run, serve
// and the benches; another value is a usage error, q8_0 on a head size
// that is not a multiple of 32 an error that says so; bench model shows
// the cache's type and bytes (16 tokens of the tiny synthetic model's 4
// layers of kv_dim 64: K and V, 2 bytes a value as f16, 34 per 32 as q8_0).
func TestKVCacheTypeFlag(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.gguf")
	tiny := testmodels.Path(t, "synthetic/synth-llama-tiny256-Q8_0.gguf")
	checkExits(t, []exitCase{
		{"run bad type", []string{"run", "-m", stories, "-p", "x", "--kv-cache-type", "q4_0"}, 2, `invalid value "q4_0" for flag --kv-cache-type`},
		{"serve bad type", []string{"serve", "-m", stories, "--kv-cache-type", "f32"}, 2, "-kv-cache-type"},
		{"bench model bad type", []string{"bench", "model", "-m", stories, "--kv-cache-type", "Q8_0"}, 2, "want one of f16, q8_0"},
		{"bench batched bad type", []string{"bench", "batched", "-m", stories, "--kv-cache-type", ""}, 2, "-kv-cache-type"},
		{"q8_0 head size 8", []string{"run", "-m", stories, "-p", "x", "-n", "2", "--device", "cpu", "--kv-cache-type", "q8_0"}, 1, "multiple of 32"},
		{"run q8_0", []string{"run", "-m", tiny, "-p", "x", "-n", "4", "--temp", "0", "--device", "cpu", "--kv-cache-type", "q8_0"}, 0, ""},
	})

	out, errOut, code := troupe(t, "bench", "model", "-m", tiny, "-p", "16", "-n", "4", "-r", "1", "--kv-cache-type", "q8_0")
	if code != 0 || !strings.Contains(out, "; KV cache q8_0, 0.01 MiB;") {
		t.Errorf("bench model: exit %d, stderr %q, output lacks the KV cache:\n%s", code, errOut, out)
	}
	for _, tc := range []struct {
		typ   string
		bytes int64
	}{{"f16", 2 * 4 * 16 * 64 * 2}, {"q8_0", 2 * 4 * 16 * 64 / 32 * 34}} {
		out, errOut, code := troupe(t, "bench", "model", "-m", tiny, "-p", "16", "-n", "0", "-r", "1", "-o", "json", "--kv-cache-type", tc.typ)
		var rows []struct {
			TypeKV  string `json:"type_kv"`
			KVBytes int64  `json:"kv_bytes"`
		}
		if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 {
			t.Fatalf("bench model json: exit %d, %v, stderr %q:\n%s", code, err, errOut, out)
		}
		if rows[0].TypeKV != tc.typ || rows[0].KVBytes != tc.bytes {
			t.Errorf("bench model json: type_kv %q, kv_bytes %d; want %s, %d", rows[0].TypeKV, rows[0].KVBytes, tc.typ, tc.bytes)
		}
	}
}
