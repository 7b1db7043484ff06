// Package openai is OpenAI's API (/v1/chat/completions, /v1/completions,
// /v1/embeddings, /v1/models) as a dialect of the request pipeline
// (server/pipeline): it decodes the wire format into one
// pipeline.Request (or pipeline.Embedding), and turns the Run's events
// back into completion objects or streamed chunks, writing
// errors in OpenAI's shape ({"error": {"message", "type", "param",
// "code"}}). Admission, templating, the sampling table, grammars and the
// parsing of tool calls and reasoning are the pipeline's (server.Start).
//
// Concurrency: a Handler is safe for concurrent use; each request is
// served on its own goroutine.
package openai
