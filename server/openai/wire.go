package openai

import (
	"net/http"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// Common are the fields every generation body has: the model, streaming,
// llama-server's timings switch, the user, and the pipeline's sampling
// part (decoded as it is: its JSON names are OpenAI's, vLLM's and
// llama-server's).
type Common struct {
	Model           string         `json:"model"`
	Stream          bool           `json:"stream"`
	StreamOptions   *streamOptions `json:"stream_options"`
	TimingsPerToken bool           `json:"timings_per_token"` // llama-server's: add "timings" to the response
	User            string         `json:"user"`
	pipeline.Sampling
}

func (c *Common) model() string { return c.Model }

// choices is the number of choices asked for (n; 1 when not given).
func (c *Common) choices() int {
	if c.N != nil {
		return *c.N
	}
	return 1
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// responseHead is what every completion object and chunk starts with.
type responseHead struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	// SystemFingerprint names the build and model that made the response.
	SystemFingerprint string `json:"system_fingerprint"`
	// Timings (llama-server's, asked for by timings_per_token) is on the
	// response, or on the stream's last chunk.
	Timings *pipeline.Timings `json:"timings,omitempty"`
}

type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// CompletionTokensDetails is set when the request speculated: OpenAI's
	// predicted-output counts, the draft tokens accepted and rejected.
	CompletionTokensDetails *predictionJSON `json:"completion_tokens_details,omitempty"`
	// Preemptions (troupe's extension) is the times the request's choices
	// lost their KV blocks to other sequences and waited to be resumed.
	Preemptions int `json:"preemptions,omitempty"`
}

type predictionJSON struct {
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

func toUsage(u messages.Usage) *usageJSON {
	j := &usageJSON{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens,
		Preemptions: u.Preemptions}
	j.PromptTokensDetails.CachedTokens = u.CachedTokens
	if u.DraftTokens > 0 {
		j.CompletionTokensDetails = &predictionJSON{u.AcceptedDraftTokens, u.DraftTokens - u.AcceptedDraftTokens}
	}
	return j
}

// usage is what a Run's Usage event reports.
type usage struct {
	counts  messages.Usage
	timings *pipeline.Timings
}

func (u *usage) add(ev *pipeline.Event) {
	if ev.Kind == pipeline.Usage {
		u.counts, u.timings = ev.Usage, ev.Timings
	}
}

// finalChunk is a stream's last chunk before [DONE], chunk (whose head and
// usage fields are given): the usage when the client asked for it with
// stream_options, and the timings when it asked with timings_per_token;
// nil when it asked for neither.
func finalChunk(chunk any, head *responseHead, out **usageJSON, u *usage, so *streamOptions, timings bool) any {
	wantUsage := so != nil && so.IncludeUsage
	if wantUsage {
		*out = toUsage(u.counts)
	}
	if timings {
		head.Timings = u.timings
	}
	if !wantUsage && !timings {
		return nil
	}
	return chunk
}

// chatLogprobs is the chat API's logprobs object.
type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

// chatTokenLogprob is a token of chat's logprobs.
type chatTokenLogprob = pipeline.TokenLogprobJSON

// add appends a Chunk event's logprobs.
func (lp *chatLogprobs) add(toks []pipeline.TokenLogprob) {
	lp.Content = pipeline.AppendLogprobs(lp.Content, toks)
}

// sse writes server-sent events as OpenAI's streaming API does: one
// "data: JSON" event per chunk (pipeline.SSE), and "data: [DONE]" last.
type sse struct{ *pipeline.SSE }

func newSSE(w http.ResponseWriter) *sse { return &sse{pipeline.NewSSE(w)} }

// send writes one event.
func (s *sse) send(v any) { s.Event("", v) }

// end sends the final chunk (usage or timings), when there is one, then
// [DONE].
func (s *sse) end(final any) {
	if final != nil {
		s.send(final)
	}
	s.Write([]byte("data: [DONE]\n\n"))
}
