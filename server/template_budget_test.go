package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/syncbuf"
	"github.com/troupe-llm/troupe/server"
)

// hostileTemplate copies 4 MB a hundred thousand times per message: it
// parses, and every render exceeds its memory budget.
const hostileTemplate = `{% set s = "x" * 4000000 %}{% for m in messages %}{% for i in range(100000) %}` +
	`{% set t = s ~ m.content %}{% endfor %}{{ m.content }}{% endfor %}`

// TestTemplateBudget: a chat template that exceeds its render budget is a
// 500 that blames the model's template (in OpenAI's and Ollama's shapes),
// logged as the template's fault; the server keeps serving.
func TestTemplateBudget(t *testing.T) {
	var logs syncbuf.Buffer
	f := newFixture(t, options{logTo: &logs, srv: server.Config{ChatTemplate: hostileTemplate}})
	msgs := `"messages": [{"role": "user", "content": "Hi"}]`
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model": "stories", "max_tokens": 2, ` + msgs + `}`},
		{"/api/chat", `{"model": "stories", "stream": false, ` + msgs + `}`},
	} {
		resp, body := post(t, f.url+c.path, c.body)
		if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "chat template exceeded its memory budget") ||
			!strings.Contains(string(body), "model file is at fault") {
			t.Errorf("%s: %d %s; want a 500 blaming the model's template", c.path, resp.StatusCode, body)
		}
	}
	if !strings.Contains(logs.String(), "the model's chat template exceeded its render budget") {
		t.Errorf("log:\n%s\nwant the template blamed", logs.String())
	}
	if resp, body := post(t, f.url+"/v1/completions", `{"model": "stories", "prompt": "Once", "max_tokens": 2}`); resp.StatusCode != http.StatusOK {
		t.Errorf("/v1/completions after: %d %s", resp.StatusCode, body)
	}
}
