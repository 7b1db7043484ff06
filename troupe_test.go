package troupe_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe"
	"github.com/troupe-llm/troupe/troupetest"
)

// tinyModel writes the tiny model into a test folder and returns its path.
func tinyModel(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := troupetest.WriteTinyModel(path, 1); err != nil {
		t.Fatal(err)
	}
	return path
}

// open opens path with opts and closes it when the test ends.
func open(t *testing.T, path string, opts ...troupe.Option) *troupe.Model {
	t.Helper()
	m, err := troupe.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// scripted opens the tiny model on a Script that answers replies, in order.
func scripted(t *testing.T, replies ...string) (*troupe.Model, *troupetest.Script) {
	t.Helper()
	s := troupetest.NewScript(troupetest.TinyVocabSize, troupetest.TinyEOS)
	m := open(t, tinyModel(t), troupe.WithBackend(s))
	for _, r := range replies {
		if err := s.PushText(m.Runtime(), r); err != nil {
			t.Fatal(err)
		}
	}
	return m, s
}

func user(text string) []troupe.Message {
	return []troupe.Message{{Role: troupe.RoleUser, Content: text}}
}

// TestChatTiny: the random tiny model generates through the pipeline:
// MaxTokens ends it with "length", usage counts the rendered prompt.
func TestChatTiny(t *testing.T) {
	m := open(t, tinyModel(t), troupe.WithThreads(1))
	resp, err := m.Chat(context.Background(), &troupe.ChatRequest{Messages: user("Hi"),
		Sampling: troupe.Sampling{MaxTokens: troupe.Int(8), Temperature: troupe.Float(0)}})
	if err != nil {
		t.Fatal(err)
	}
	// "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n": 2+5+1+2+1+10+1 tokens, one per byte but the specials
	want := len("user\nHi") + len("\n") + len("assistant\n") + 3
	if resp.Usage.PromptTokens != want || resp.Usage.CompletionTokens > 8 {
		t.Errorf("usage %+v, want %d prompt tokens and at most 8 generated", resp.Usage, want)
	}
	if resp.Finish != troupe.FinishLength && resp.Finish != troupe.FinishStop {
		t.Errorf("finish %q", resp.Finish)
	}
}

// TestChatScripted: a scripted answer comes back whole and streamed, a
// stop string cuts it, and a tool call is parsed as serve parses it.
func TestChatScripted(t *testing.T) {
	call := "<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	m, _ := scripted(t, "Hello there. Bye", "Hello there. Bye", call)
	ctx := context.Background()
	var streamed strings.Builder
	resp, err := m.ChatStream(ctx, &troupe.ChatRequest{Messages: user("Hi")}, func(d troupe.Delta) error {
		streamed.WriteString(d.Content)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Hello there. Bye" || streamed.String() != resp.Content || resp.Finish != troupe.FinishStop {
		t.Errorf("got %q (streamed %q), finish %q", resp.Content, streamed.String(), resp.Finish)
	}
	resp, err = m.Chat(ctx, &troupe.ChatRequest{Messages: user("Hi"), Sampling: troupe.Sampling{Stop: []string{"."}}})
	if err != nil || resp.Content != "Hello there" || resp.Stop != "." {
		t.Errorf("with a stop string: %+v, %v", resp, err)
	}
	tools := []troupe.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}
	resp, err = m.Chat(ctx, &troupe.ChatRequest{Messages: user("Weather in Paris?"), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "weather" || resp.ToolCalls[0].Arguments != `{"city": "Paris"}` ||
		resp.Finish != troupe.FinishToolCall || resp.Content != "" {
		t.Errorf("tool call: %+v", resp)
	}
}

// TestChatErrors: a bad field is an *Error naming the Go field, with its
// kind; a cancelled context is the context's error.
func TestChatErrors(t *testing.T) {
	m, _ := scripted(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		req   *troupe.ChatRequest
		kind  error
		field string
	}{
		{"no messages", &troupe.ChatRequest{}, troupe.ErrInvalid, "Messages"},
		{"temperature", &troupe.ChatRequest{Messages: user("x"), Sampling: troupe.Sampling{Temperature: troupe.Float(-1)}}, troupe.ErrInvalid, "Sampling.Temperature"},
		{"schema", &troupe.ChatRequest{Messages: user("x"), JSON: &troupe.JSONFormat{Schema: json.RawMessage(`{"type":"nope"}`)}}, troupe.ErrInvalid, "JSON.Schema"},
		{"context", &troupe.ChatRequest{Messages: user(strings.Repeat("x", 3000))}, troupe.ErrContextLength, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Chat(ctx, tc.req)
			var e *troupe.Error
			if !errors.As(err, &e) || !errors.Is(err, tc.kind) || (tc.field != "" && e.Field != tc.field) {
				t.Errorf("got %v (%#v), want a %v naming %q", err, e, tc.kind, tc.field)
			}
		})
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Chat(cancelled, &troupe.ChatRequest{Messages: user("x")}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestStreamCallbackError: fn's error cancels the generation and comes
// back as it is.
func TestStreamCallbackError(t *testing.T) {
	m, _ := scripted(t, strings.Repeat("word ", 200))
	stop := errors.New("enough")
	n := 0
	_, err := m.ChatStream(context.Background(), &troupe.ChatRequest{Messages: user("x")}, func(troupe.Delta) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("err %v after %d deltas, want %v after 3", err, n, stop)
	}
}

// TestJSONMode: the answer of a random model under a schema parses and
// matches it.
func TestJSONMode(t *testing.T) {
	m := open(t, tinyModel(t))
	schema := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`
	resp, err := m.Chat(context.Background(), &troupe.ChatRequest{Messages: user("a number"),
		JSON: &troupe.JSONFormat{Schema: json.RawMessage(schema)}, Sampling: troupe.Sampling{MaxTokens: troupe.Int(64), Seed: troupe.Int64(3)}})
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ N *int }
	if resp.Finish == troupe.FinishStop {
		if err := json.Unmarshal([]byte(resp.Content), &v); err != nil || v.N == nil {
			t.Errorf("%q does not match the schema: %v", resp.Content, err)
		}
	} else if !strings.HasPrefix(resp.Content, `{`) {
		t.Errorf("%q (finish %s) does not start the schema's object", resp.Content, resp.Finish)
	}
}

// TestEmbedTokenize: embeddings are unit vectors of the model's width,
// one per text; Tokenize and Detokenize round-trip.
func TestEmbedTokenize(t *testing.T) {
	m := open(t, tinyModel(t))
	vecs, err := m.Embed(context.Background(), "a cat", "a dog")
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || len(vecs[0]) != troupetest.TinyShape.Dim {
		t.Fatalf("%d vectors of %d", len(vecs), len(vecs[0]))
	}
	var norm float64
	for _, x := range vecs[0] {
		norm += float64(x) * float64(x)
	}
	if norm < 0.999 || norm > 1.001 {
		t.Errorf("squared norm %v, want 1", norm)
	}
	if _, err := m.Embed(context.Background(), ""); !errors.Is(err, troupe.ErrInvalid) {
		t.Errorf("empty text: %v", err)
	}
	ids, err := m.Tokenize("héllo <|im_end|>")
	if err != nil || len(ids) != len("héllo ")+1 {
		t.Fatalf("Tokenize: %v %v", ids, err)
	}
	if s, err := m.Detokenize(ids[:len(ids)-1]); s != "héllo " || err != nil {
		t.Errorf("Detokenize: %q %v", s, err)
	}
}
