// Package pipeline is the neutral request pipeline every API dialect
// shares. A dialect (server/openai, server/ollama, server/anthropic,
// server/responses)
// translates its wire format into one Request and
// the pipeline's Events back into its wire format; it writes its own error
// shape from the typed Error. Everything in between is done once, by the
// Runner (server.Server implements it): admission, chat templating,
// tokenization, grammar compilation (response formats, forced tool calls),
// the runtime call, and the parsing of tool calls and reasoning.
//
//	dialect ──Request──▶ Runner.Start ─ admit, render, tokenize, grammar, check, launch
//	dialect ◀──Events─── Run.Each     ─ text, reasoning and tool-call deltas, finish, usage, errors
//
// Concurrency: a Request is owned by the handler that built it. A Run's
// Each is called once, from the handler's goroutine; it returns when the
// generation is over (or the client's context ended) and releases the
// request's admission.
package pipeline
