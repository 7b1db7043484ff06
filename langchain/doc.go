// Package langchain adapts a troupe.Model to langchaingo
// (github.com/tmc/langchaingo), in process: LLM is an llms.Model (messages,
// tools and tool calls, a streaming function, JSON mode) and Embedder an
// embeddings.Embedder, so langchaingo's chains, agents and vector stores run
// on a local model with no server between them.
//
// Requests go through troupe's request pipeline, as troupe serve's
// /v1/chat/completions does: the model's chat template renders the
// messages, its tool-call format is parsed into llms.ToolCall values, and
// JSON mode constrains the output by grammar. A call option troupe cannot
// honour (several candidates, repetition penalties, min/max length, images)
// is an error naming it, never ignored.
//
// Concurrency: LLM and Embedder are safe for concurrent use; concurrent
// calls are batched by troupe's runtime.
package langchain
