// Package pipelinetest is a scripted pipeline Runner, for the dialects'
// tests: Start records the request, and its Run replays the events.
package pipelinetest

import (
	"context"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// Runner serves the model "m" (64 tokens of context) with every method
// a dialect calls. Concurrency: one request at a time.
type Runner struct {
	Events   []pipeline.Event // what Each replays
	Err      *pipeline.Error  // what Start answers, when set
	Thinking bool             // Thinks
	Got      *pipeline.Request
}

func (f *Runner) Model() string                                        { return "m" }
func (f *Runner) Authorized(string) bool                               { return true }
func (f *Runner) MaxBodyBytes() int64                                  { return 1 << 20 }
func (f *Runner) Thinks() bool                                         { return f.Thinking }
func (f *Runner) Fingerprint() string                                  { return "fp" }
func (f *Runner) MaxModelLen() int                                     { return 64 }
func (f *Runner) HasTemplate() bool                                    { return true }
func (f *Runner) Admissible() *pipeline.Error                          { return nil }
func (f *Runner) PromptTokens() int                                    { return 3 }
func (f *Runner) CountTokens(*pipeline.Request) (int, *pipeline.Error) { return 0, nil }

// Embed answers one one-dimensional vector.
func (f *Runner) Embed(context.Context, *pipeline.Embedding) ([][]float32, int, *pipeline.Error) {
	return [][]float32{{1}}, 1, nil
}

// Start records req and answers Err, or the Runner as the Run.
func (f *Runner) Start(_ context.Context, req *pipeline.Request) (pipeline.Run, *pipeline.Error) {
	f.Got = req
	if f.Err != nil {
		return nil, f.Err
	}
	return f, nil
}

// Each replays Events.
func (f *Runner) Each(fn func(*pipeline.Event)) *pipeline.Error {
	for i := range f.Events {
		fn(&f.Events[i])
	}
	return nil
}
