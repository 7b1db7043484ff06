package server

import (
	"time"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// timingsJSON is llama-server's "timings" object (pipeline.Timings): a
// request asks for it with "timings_per_token": true.
type timingsJSON = pipeline.Timings

// timings is the job's timings once it is drained.
func (j *job) timings() *timingsJSON {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	per := func(n int, d time.Duration) (perToken, perSecond float64) {
		if n == 0 || d <= 0 {
			return 0, 0
		}
		return ms(d) / float64(n), float64(n) / d.Seconds()
	}
	var first, last time.Time
	for i := range j.first {
		if f := j.first[i]; !f.IsZero() && (first.IsZero() || f.Before(first)) {
			first = f
		}
		if l := j.last[i]; l.After(last) {
			last = l
		}
	}
	t := &timingsJSON{QueueMs: ms(j.queue), CacheN: j.usage.CachedTokens, PromptN: j.usage.PromptTokens - j.usage.CachedTokens,
		PredictedN: j.usage.CompletionTokens}
	if first.IsZero() {
		return t
	}
	prompt := max(first.Sub(j.start)-j.queue, 0)
	gen := last.Sub(first)
	t.PromptMs, t.PredictedMs = ms(prompt), ms(gen)
	t.PromptPerTokenMs, t.PromptPerSecond = per(t.PromptN, prompt)
	t.PredictedPerTokenMs, t.PredictedPerSecond = per(t.PredictedN, gen)
	return t
}
