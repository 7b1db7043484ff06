package bench

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReadStream: the streams of completions and chat, as vLLM, troupe
// and llama-server write them, and the ways a stream goes wrong.
func TestReadStream(t *testing.T) {
	const usage = `data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}` + "\n\n"
	for _, tc := range []struct {
		name            string
		body            string
		err             string // a substring of the error; "": success
		chunks, outputs int
		promptTokens    int
		usage           bool
	}{
		{name: "completions",
			body:   "data: {\"choices\":[{\"text\":\"Once\"}]}\n\ndata: {\"choices\":[{\"text\":\" upon\"}]}\n\n: a comment\n\ndata: {\"choices\":[{\"text\":\" a\",\"finish_reason\":\"length\"}]}\n\n" + usage + "data: [DONE]\n\n",
			chunks: 3, outputs: 3, promptTokens: 7, usage: true},
		{name: "chat: a role chunk and a finish chunk carry no content",
			body: `data: {"choices":[{"delta":{"role":"assistant","content":null}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"content":"Hi"}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"reasoning_content":"hmm"}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{},"finish_reason":"length"}]}` + "\n\n" + usage + "data: [DONE]\n\n",
			chunks: 2, outputs: 3, promptTokens: 7, usage: true},
		{name: "usage in the last content chunk, CRLF, no space after data:",
			body:   "data:{\"choices\":[{\"text\":\"a\"}]}\r\n\r\ndata:{\"choices\":[{\"text\":\"b\"}],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2}}\r\n\r\ndata:[DONE]",
			chunks: 2, outputs: 2, promptTokens: 2, usage: true},
		{name: "no usage: output tokens are content chunks",
			body:   "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n",
			chunks: 2, outputs: 2, promptTokens: 5},
		{name: "no [DONE]", body: "data: {\"choices\":[{\"text\":\"a\"}]}\n\n", err: "stream ended without [DONE] after 1 content chunks"},
		{name: "cut mid-chunk", body: "data: {\"choices\":[{\"te", err: "bad chunk"},
		{name: "error event", body: "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"error\":{\"message\":\"out of KV blocks\",\"type\":\"server_error\"}}\n\ndata: [DONE]\n\n", err: "error event: out of KV blocks"},
		{name: "error event as a string", body: "data: {\"error\":\"boom\"}\n\n", err: "error event: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := RequestResult{PromptTokens: 5}
			start := time.Now().Add(-time.Millisecond) // so that every time measured is positive
			err := readStream(strings.NewReader(tc.body), start, &res)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Chunks != tc.chunks || res.OutputTokens != tc.outputs || res.PromptTokens != tc.promptTokens || res.Usage != tc.usage {
				t.Errorf("chunks %d output tokens %d prompt tokens %d usage %t; want %d %d %d %t",
					res.Chunks, res.OutputTokens, res.PromptTokens, res.Usage, tc.chunks, tc.outputs, tc.promptTokens, tc.usage)
			}
			if len(res.ITL) != tc.chunks-1 || res.TTFT <= 0 || res.Latency < res.TTFT {
				t.Errorf("%d gaps for %d chunks, TTFT %v, E2EL %v", len(res.ITL), tc.chunks, res.TTFT, res.Latency)
			}
		})
	}
}

func TestHTTPError(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"error":{"message":"too many requests","type":"rate_limit"}}`, "HTTP 429 Too Many Requests: too many requests"},
		{`{"error":"no slot"}`, "HTTP 429 Too Many Requests: no slot"},
		{`{"message":"busy"}`, "HTTP 429 Too Many Requests: busy"},
		{"<html>\n  busy\n</html>", "HTTP 429 Too Many Requests: <html> busy </html>"},
	} {
		resp := &http.Response{Status: "429 Too Many Requests", StatusCode: 429, Body: io.NopCloser(strings.NewReader(tc.body))}
		if got := httpError(resp).Error(); got != tc.want {
			t.Errorf("body %q: %q, want %q", tc.body, got, tc.want)
		}
	}
}
