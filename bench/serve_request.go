package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// RequestResult is what one request did, as its client saw it.
type RequestResult struct {
	Sent      bool  // false: the run ended before its turn
	Err       error // nil: it succeeded
	Cancelled bool  // it failed because the run was interrupted: neither a success nor a failure

	PromptTokens int  // from the usage chunk; without one, the prompt's words
	OutputTokens int  // from the usage chunk; without one, the content chunks
	Usage        bool // the server sent a usage chunk
	Chunks       int  // chunks with content
	MaxTokens    int  // the max_tokens it asked for

	TTFT    time.Duration   // from sending to the first content chunk; 0 when none came
	ITL     []time.Duration // the gaps between content chunks
	Latency time.Duration   // from sending to the end of the stream (E2EL)
}

// TPOT is the time per output token after the first: (E2EL - TTFT) /
// (output tokens - 1), and 0 for a request of one output token or less.
func (r *RequestResult) TPOT() time.Duration {
	if r.OutputTokens <= 1 {
		return 0
	}
	return (r.Latency - r.TTFT) / time.Duration(r.OutputTokens-1)
}

// serveClient sends the run's requests to one endpoint.
type serveClient struct {
	http          *http.Client
	base          string // the server's URL, without /v1
	model, apiKey string
	chat          bool // /v1/chat/completions, else /v1/completions
	ignoreEOS     bool
}

func (c *serveClient) endpoint() string {
	if c.chat {
		return "chat"
	}
	return "completions"
}

func (c *serveClient) endpointURL() string {
	if c.chat {
		return c.base + "/v1/chat/completions"
	}
	return c.base + "/v1/completions"
}

func (c *serveClient) authorize(req *http.Request) {
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
}

// body is the request's JSON: greedy, streaming, with a usage chunk.
func (c *serveClient) body(r serveRequest) ([]byte, error) {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	b := struct {
		Model         string          `json:"model"`
		Prompt        string          `json:"prompt,omitempty"`
		Messages      []message       `json:"messages,omitempty"`
		MaxTokens     int             `json:"max_tokens"`
		Temperature   float64         `json:"temperature"`
		Stream        bool            `json:"stream"`
		StreamOptions map[string]bool `json:"stream_options"`
		IgnoreEOS     bool            `json:"ignore_eos,omitempty"`
	}{Model: c.model, MaxTokens: r.outputLen, Stream: true, StreamOptions: map[string]bool{"include_usage": true}, IgnoreEOS: c.ignoreEOS}
	if c.chat {
		b.Messages = []message{{Role: "user", Content: r.prompt}}
	} else {
		b.Prompt = r.prompt
	}
	return json.Marshal(b)
}

// do sends one request and reads its stream to the end.
func (c *serveClient) do(ctx context.Context, r serveRequest) (res RequestResult) {
	res = RequestResult{Sent: true, MaxTokens: r.outputLen, PromptTokens: r.inputLen}
	defer func() {
		if res.Err != nil && ctx.Err() != nil {
			res.Cancelled = true
		}
	}()
	body, err := c.body(r)
	if err != nil {
		res.Err = err
		return res
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpointURL(), bytes.NewReader(body))
	if err != nil {
		res.Err = err
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	c.authorize(req)
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		res.Err = err
		return res
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		res.Err = httpError(resp)
		return res
	}
	res.Err = readStream(resp.Body, start, &res)
	return res
}

// streamChunk is the part of a completions or chat chunk that is read.
type streamChunk struct {
	Choices []struct {
		Text  string `json:"text"` // completions
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"delta"` // chat
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// readStream reads server-sent events until "data: [DONE]", timing the
// content chunks into res. A chunk with content is one whose first choice
// has text (completions) or delta content (chat, reasoning included).
func readStream(body io.Reader, start time.Time, res *RequestResult) error {
	br := bufio.NewReader(body)
	var last time.Time
	for {
		line, err := br.ReadBytes('\n')
		now := time.Now()
		switch {
		case errors.Is(err, io.EOF) && len(line) == 0:
			return fmt.Errorf("stream ended without [DONE] after %d content chunks", res.Chunks)
		case err != nil && !errors.Is(err, io.EOF):
			return fmt.Errorf("stream broken after %d content chunks: %w", res.Chunks, err)
		} // a last line without its newline is read, and the next read ends the stream
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue // blank lines, comments, event names
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			res.Latency = now.Sub(start)
			if !res.Usage {
				res.OutputTokens = res.Chunks
			}
			return nil
		}
		var ch streamChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return fmt.Errorf("bad chunk %.100q: %v", data, err)
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return fmt.Errorf("error event: %s", errorMessage(ch.Error))
		}
		if ch.Usage != nil {
			res.Usage, res.PromptTokens, res.OutputTokens = true, ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		}
		if len(ch.Choices) == 0 {
			continue
		}
		if c := ch.Choices[0]; c.Text == "" && c.Delta.Content == "" && c.Delta.ReasoningContent == "" {
			continue // a role, a finish reason: no content
		}
		if res.Chunks == 0 {
			res.TTFT = now.Sub(start)
		} else {
			res.ITL = append(res.ITL, now.Sub(last))
		}
		last = now
		res.Chunks++
	}
}

// httpError is a non-200 response as an error, with the message of
// OpenAI's error shape when the body has one.
func httpError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var shaped struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	msg := strings.Join(strings.Fields(string(b)), " ") // one line
	if json.Unmarshal(b, &shaped) == nil {
		switch {
		case len(shaped.Error) > 0 && string(shaped.Error) != "null":
			msg = errorMessage(shaped.Error)
		case shaped.Message != "":
			msg = shaped.Message
		}
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return fmt.Errorf("HTTP %s: %s", resp.Status, msg)
}

// errorMessage is the message of an "error" field: OpenAI's object
// {"message": ...}, or a plain string.
func errorMessage(raw json.RawMessage) string {
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	return string(raw)
}
