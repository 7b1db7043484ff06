package server_test

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/server"
)

// TestManagerMetrics: the manager's /metrics carries every loaded model's
// series, each with its model_name, in one valid exposition (the Go
// runtime's series once), beside the manager's own: models loaded, each
// one's memory, the budget.
func TestManagerMetrics(t *testing.T) {
	f := newManaged(t, func(c *server.ManagerConfig) {
		c.MaxBytes, c.Size = 10000, fakeSizes(map[string]int64{"small": 3000, "tiny": 5000})
	})
	resp, b := get(t, f.url+"/metrics")
	if resp.StatusCode != 200 || !strings.Contains(string(b), "troupe:models_loaded 0") {
		t.Fatalf("/metrics with nothing loaded: %d %s", resp.StatusCode, b)
	}
	f.complete(t, "small", "")
	f.complete(t, "tiny", "")
	f.complete(t, "tiny", "")
	resp, b = get(t, f.url+"/metrics")
	body := string(b)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	for _, want := range []string{
		`troupe:generation_tokens_total{model_name="small"} 12`,
		`troupe:generation_tokens_total{model_name="tiny"} 24`,
		`troupe:request_success_total{finished_reason="length",model_name="tiny"} 2`,
		`troupe:num_requests_running{model_name="small"} 0`,
		`troupe:model_memory_bytes{model_name="small"} 3000`,
		`troupe:model_memory_bytes{model_name="tiny"} 5000`,
		`troupe:models_loaded 2`,
		`troupe:models_memory_budget_bytes 10000`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, once := range []string{"# TYPE go_goroutines ", "# TYPE troupe:generation_tokens_total ", "# TYPE process_resident_memory_bytes "} {
		if n := strings.Count(body, once); n != 1 {
			t.Errorf("%q %d times", once, n)
		}
	}
	if _, b2 := get(t, f.url+"/v1/metrics"); !strings.Contains(string(b2), `model_name="tiny"`) {
		t.Errorf("/v1/metrics: %.200s", b2)
	}
}
