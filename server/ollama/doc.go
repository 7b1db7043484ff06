// Package ollama is Ollama's API (/api/chat, /api/generate, /api/embed,
// /api/embeddings, /api/tags, /api/show, /api/ps, /api/version;
// github.com/ollama/ollama, docs/api.md) as a dialect of the request
// pipeline (server/pipeline): it maps Ollama's bodies (messages, prompt,
// raw, suffix, context, options over Ollama's defaults, format, think,
// tools) onto one pipeline.Request, and the Run's events back onto
// Ollama's objects, streamed as NDJSON or answered whole, with Ollama's
// counters and durations; errors have Ollama's shape, {"error": "..."}.
// /api/embed and /api/embeddings go through the pipeline's Embedder;
// /api/tags, /api/show, /api/ps and /api/version describe the Model the
// server hands the Handler.
//
// Concurrency: a Handler is safe for concurrent use; each request is
// served on its own goroutine.
package ollama
