// Package troupe runs a language model inside a Go program: no server, no
// actor system of the program's own. Open loads a GGUF model and starts
// troupe's runtime (continuous batching over paged KV blocks, on the CPU
// or a CUDA GPU); the Model it returns answers
//
//   - Chat and ChatStream: a conversation through the model's chat
//     template, with tools and parsed tool calls, JSON or JSON-Schema
//     output, reasoning apart from the answer, stop strings and every
//     sampling field;
//   - Complete and CompleteStream: a raw prompt;
//   - Embed: embeddings of texts;
//   - Tokenize and Detokenize;
//   - Handler: the same model over troupe serve's HTTP API, to mount on the
//     program's own server.
//
// Chat and Complete go through the same request pipeline as troupe
// serve's HTTP routes, so a request behaves in process exactly as it does
// over HTTP (an invalid field is an *Error naming the Go field).
//
// A good citizen in its host: troupe logs nothing unless given a logger
// (WithLogger, WithSlog), registers its metrics only on the registry it is
// given (WithMetrics), bounds its threads and KV memory (WithThreads,
// WithKVCacheBytes, WithContextLength, WithMaxSequences), stops a request
// when its context is cancelled, and Close frees everything it started,
// goroutines included. It touches no global logger and no default
// registry.
//
// Programs that run protoactor themselves, or a cluster, start the
// runtime inside their own actor system with package actors (actors.Start)
// instead. Package troupetest writes a tiny model for tests and examples,
// and scripts a model's output; package langchain adapts a Model to
// langchaingo.
//
// Concurrency: a Model's methods are safe for concurrent use; concurrent
// requests are batched together. Close waits for nothing: what still runs
// is cancelled.
package troupe
