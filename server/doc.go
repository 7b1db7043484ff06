// Package server is troupe's HTTP front: the request pipeline's Runner
// (Server.Start, pipeline_run.go) under the API dialects (server/openai:
// /v1/completions, /v1/chat/completions, /v1/embeddings, /v1/models;
// server/ollama: /api/chat, /api/generate, /api/embed, /api/tags, ...;
// server/anthropic; server/responses), plus /infill, /tokenize,
// /detokenize, /health and /metrics, over the actor runtime of package
// actors. It validates requests, renders chat templates (server/chat),
// maps structured-output fields to grammars and tool calls to and from the
// model's format (server/toolcall), streams server-sent events, turns a
// client that goes away into a Cancel, and keeps Prometheus metrics named
// after vLLM's.
//
// The front actor (front.go) holds the server's state machine, loading ->
// ready -> draining, and its admission count; handlers ask it before they
// submit, with a timeout (futures only at this edge).
//
// Concurrency: a Server is safe for concurrent use; each HTTP request is
// served on its own goroutine.
package server
