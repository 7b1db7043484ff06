// Package openai is OpenAI's Chat Completions and Completions APIs
// (/v1/chat/completions, /v1/completions)
// as a dialect of the request pipeline (server/pipeline): it decodes the
// wire format into one pipeline.Request, and turns the Run's events back
// into chat.completion objects or chat.completion.chunk events, writing
// errors in OpenAI's shape ({"error": {"message", "type", "param",
// "code"}}). Admission, templating, the sampling table, grammars and the
// parsing of tool calls and reasoning are the pipeline's (server.Start).
//
// Concurrency: a Handler is safe for concurrent use; each request is
// served on its own goroutine.
package openai
