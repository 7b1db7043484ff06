package openai

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSSE streams pieces of text (split at NUL bytes) as completion chunks
// and reads the stream back the way an SSE client does: every event must be
// one "data: " line, the stream must end with [DONE], and the texts must
// join to the input (for valid UTF-8; invalid bytes become U+FFFD, as in
// encoding/json).
func FuzzSSE(f *testing.F) {
	f.Add("Hello\x00 world\x00\n\ndata: [DONE]\n\n\x00\r\n\x00é")
	f.Add("\u2028\u2029</script>\x00\"\\")
	f.Add("\xff\xfe\x00ok")
	f.Fuzz(func(t *testing.T, text string) {
		rec := httptest.NewRecorder()
		out := newSSE(rec)
		parts := strings.Split(text, "\x00")
		for i, p := range parts {
			out.send(&completionResponse{Choices: []completionChoice{{Index: i, Text: p}}})
		}
		out.end(&completionResponse{Usage: &usageJSON{}})

		body := rec.Body.String()
		if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		if !strings.HasSuffix(body, "\n\n") {
			t.Fatalf("the stream does not end with a blank line: %q", body)
		}
		events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
		if len(events) != len(parts)+2 || events[len(events)-1] != "data: [DONE]" {
			t.Fatalf("%d events for %d chunks, the last %q", len(events), len(parts), events[len(events)-1])
		}
		var got []string
		for _, ev := range events[:len(parts)] {
			data, ok := strings.CutPrefix(ev, "data: ")
			if !ok || strings.ContainsAny(data, "\r\n") {
				t.Fatalf("event %q is not one data line", ev)
			}
			var c completionResponse
			if err := json.Unmarshal([]byte(data), &c); err != nil || len(c.Choices) != 1 {
				t.Fatalf("event %q: %v", data, err)
			}
			got = append(got, c.Choices[0].Text)
		}
		if utf8.ValidString(text) && strings.Join(got, "\x00") != text {
			t.Fatalf("read back %q, sent %q", got, parts)
		}
	})
}
