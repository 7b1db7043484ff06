package server_test

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/server"
)

// TestModelAliases: a model served under several names (vLLM's
// --served-model-name list) answers each of them on every API and lists
// them all; another name is still a 404.
func TestModelAliases(t *testing.T) {
	f := newFixture(t, options{srv: server.Config{ModelName: "stories", ModelAliases: []string{"tiny", "kids:v1"}}})
	for _, name := range []string{"stories", "tiny", "kids:v1"} {
		for _, tc := range []struct{ path, body string }{
			{"/v1/chat/completions", `{"model": "` + name + `", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}`},
			{"/v1/completions", `{"model": "` + name + `", "prompt": "Hi", "max_tokens": 2}`},
			{"/v1/messages", `{"model": "` + name + `", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}`},
			{"/v1/responses", `{"model": "` + name + `", "input": "Hi", "max_output_tokens": 2}`},
			{"/api/generate", `{"model": "` + name + `", "prompt": "Hi", "stream": false, "options": {"num_predict": 2}}`},
		} {
			if resp, b := post(t, f.url+tc.path, tc.body); resp.StatusCode != 200 {
				t.Errorf("%s as %q: %d %s", tc.path, name, resp.StatusCode, b)
			}
		}
		if resp, b := get(t, f.url+"/v1/models/"+name); resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"`+name+`"`) {
			t.Errorf("/v1/models/%s: %d %s", name, resp.StatusCode, b)
		}
	}
	resp, b := get(t, f.url+"/v1/models")
	if resp.StatusCode != 200 || strings.Count(string(b), `"object":"model"`) != 3 {
		t.Errorf("/v1/models: %d %s, want three names", resp.StatusCode, b)
	}
	if resp, b := post(t, f.url+"/v1/completions", `{"model": "other", "prompt": "Hi", "max_tokens": 2}`); resp.StatusCode != 404 {
		t.Errorf("another name: %d %s", resp.StatusCode, b)
	}
	if resp, b := post(t, f.url+"/api/generate", `{"model": "other", "prompt": "Hi", "stream": false}`); resp.StatusCode != 404 {
		t.Errorf("another name on Ollama's route: %d %s", resp.StatusCode, b)
	}
}
