package cluster

import (
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/messages"
)

// TestRelayBound: the origin passes on a member's output up to max_tokens
// tokens a choice and the text those tokens can stand for; past either,
// the choice ends with an error and the excess never reaches the client.
// A Done chunk's usage is clamped to max_tokens x n.
func TestRelayBound(t *testing.T) {
	tok := func(n int) []messages.Token { return make([]messages.Token, n) }
	for _, tc := range []struct {
		name   string
		chunks []messages.OutputChunk
		want   []string // per chunk reaching the client: its text, or "error"
	}{
		{"within", []messages.OutputChunk{{Tokens: tok(2), Text: "ab"}, {Tokens: tok(1), Text: "c", FinishReason: "length"}},
			[]string{"ab", "c"}},
		{"too many tokens", []messages.OutputChunk{{Tokens: tok(2), Text: "ab"}, {Tokens: tok(2), Text: "cd"}, {Tokens: tok(1), Text: "e"}},
			[]string{"ab", "error"}},
		{"too much text", []messages.OutputChunk{{Tokens: tok(1), Text: strings.Repeat("x", 100)}}, []string{"error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			c := &call{req: &messages.GenerateRequest{RequestID: "r", MaxTokens: 3, N: 1}, attempt: 1,
				sent: make([]progress, 1), seen: make([]progress, 1), target: &actor.PID{Address: "member"},
				limits: relayLimits{tokens: 3, textPerToken: 8, completionMax: 3},
				sink: func(ch *messages.OutputChunk) {
					if ch.FinishReason == messages.FinishError {
						if !strings.Contains(ch.Err, "node member sent") {
							t.Errorf("error %q does not name the node", ch.Err)
						}
						got = append(got, "error")
						return
					}
					got = append(got, ch.Text)
				}}
			for i := range tc.chunks {
				c.pass(nil, &tc.chunks[i])
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("client got %q, want %q", got, tc.want)
			}
		})
	}
	done := &messages.OutputChunk{Done: true, Usage: &messages.Usage{CompletionTokens: 1 << 30}}
	relayLimits{completionMax: 6}.boundUsage(done)
	if done.Usage.CompletionTokens != 6 {
		t.Errorf("usage %d, want 6", done.Usage.CompletionTokens)
	}
}
