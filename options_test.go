package troupe_test

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe"
)

// TestOptionErrors: an impossible option is an error naming it, and
// nothing is left open.
func TestOptionErrors(t *testing.T) {
	path := tinyModel(t)
	noLeaksSince(t)
	for _, tc := range []struct {
		opt  troupe.Option
		want string
	}{
		{troupe.WithThreads(0), "WithThreads"},
		{troupe.WithKVCacheBytes(1), "WithKVCacheBytes"},
		{troupe.WithKVCacheBytes(-1), "WithKVCacheBytes"},
		{troupe.WithContextLength(0), "WithContextLength"},
		{troupe.WithMaxSequences(0), "WithMaxSequences"},
		{troupe.WithDevice("tpu"), "WithDevice"},
		{troupe.WithMetrics(nil), "WithMetrics"},
		{troupe.WithSlog(nil), "WithSlog"},
		{troupe.WithBackend(nil), "WithBackend"},
		{troupe.WithChatTemplate("{% if %}"), "chat template"},
		{troupe.WithToolCallParser("nope"), "nope"},
	} {
		m, err := troupe.Open(context.Background(), path, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error naming %s", err, tc.want)
		}
		if m != nil {
			m.Close()
		}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := troupe.Open(cancelled, path); err == nil {
		t.Error("Open with a cancelled context succeeded")
	}
}

// TestWithLogger: the HTTP handler's request lines go to the zerolog
// logger the program passes.
func TestWithLogger(t *testing.T) {
	var buf bytes.Buffer
	m := open(t, tinyModel(t), troupe.WithLogger(zerolog.New(&buf)))
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/models", nil))
	if rec.Code != 200 || !strings.Contains(buf.String(), `"/v1/models"`) {
		t.Errorf("status %d; the program's logger got %q", rec.Code, buf.String())
	}
}

// TestComplete: a raw prompt, no template, streamed and whole.
func TestComplete(t *testing.T) {
	m, _ := scripted(t, " upon a time", " upon a time")
	var streamed strings.Builder
	resp, err := m.CompleteStream(context.Background(), &troupe.CompletionRequest{Prompt: "Once"}, func(d troupe.Delta) error {
		streamed.WriteString(d.Content)
		return nil
	})
	if err != nil || resp.Content != " upon a time" || streamed.String() != resp.Content || resp.Usage.PromptTokens != 4 {
		t.Errorf("CompleteStream: %+v (streamed %q), %v", resp, streamed.String(), err)
	}
	resp, err = m.Complete(context.Background(), &troupe.CompletionRequest{Prompt: "Once", Sampling: troupe.Sampling{MaxTokens: troupe.Int(3)}})
	if err != nil || resp.Content != " up" || resp.Finish != troupe.FinishLength {
		t.Errorf("Complete with 3 tokens: %+v, %v", resp, err)
	}
	if _, err := m.Complete(context.Background(), nil); err == nil {
		t.Error("a nil request succeeded")
	}
}

// TestSamplingFields: the facade's sampling fields reach the runtime's
// request as the HTTP routes' do, and a bad one is an error naming the Go
// field.
func TestSamplingFields(t *testing.T) {
	m := open(t, tinyModel(t))
	one, three, bad := 1, 3, -1
	p, x, tau := 0.5, 2.0, 3.0
	ctx := context.Background()
	for _, s := range []troupe.Sampling{
		{MaxTokens: &one, PresencePenalty: &p, FrequencyPenalty: &p, RepetitionPenalty: &x, LogitBias: map[int32]float64{3: -100}},
		{MaxTokens: &one, MinTokens: &one, IgnoreEOS: true, TypicalP: &p, XTCProbability: &p, XTCThreshold: &p},
		{MaxTokens: &one, DryMultiplier: &p, DryAllowedLength: &one, DryBreakers: []string{"."}},
		{MaxTokens: &one, Mirostat: &one, MirostatTau: &tau},
	} {
		if _, err := m.Complete(ctx, &troupe.CompletionRequest{Prompt: "Hi", Sampling: s}); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	for _, tc := range []struct {
		s     troupe.Sampling
		field string
	}{
		{troupe.Sampling{TypicalP: &x}, "Sampling.TypicalP"},
		{troupe.Sampling{MinTokens: &bad}, "Sampling.MinTokens"},
		{troupe.Sampling{Mirostat: &three}, "Sampling.Mirostat"},
	} {
		_, err := m.Complete(ctx, &troupe.CompletionRequest{Prompt: "Hi", Sampling: tc.s})
		var e *troupe.Error
		if !errors.As(err, &e) || e.Field != tc.field {
			t.Errorf("%+v: %v, want an error naming %s", tc.s, err, tc.field)
		}
	}
}
