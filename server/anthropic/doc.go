// Package anthropic serves Anthropic's Messages API (POST /v1/messages and
// POST /v1/messages/count_tokens) on the request pipeline: it translates
// the wire format into a pipeline.Request and the pipeline's events into a
// message or its stream of events, and writes Anthropic's error shape,
// {"type": "error", "error": {"type": ..., "message": ...}}.
//
// Concurrency: a Handler is safe for concurrent use; each request is
// served on its own goroutine and shares nothing with others.
package anthropic
