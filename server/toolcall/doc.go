// Package toolcall finds the tool calls in a model's output, in the format
// its chat template taught it (hermes <tool_call>, llama 3 JSON, mistral
// [TOOL_CALLS], gpt-oss harmony, ...), as llama.cpp's common/chat does.
//
// A Parser parses a whole output (Parse) or is fed text deltas by a Stream,
// which emits OpenAI-ordered deltas: content and reasoning as they come,
// holding back text that may begin a tool-call marker; then, per call, its
// id and name, then its arguments. Whatever looks like a call but does not
// parse comes back as content. The accumulated deltas of a stream equal
// Parse of the whole text, whatever the split.
//
// The parser must see the markers as text: Format.Markers lists those a
// tokenizer may hold as control tokens, which the server decodes as their
// text. Calls are emitted whole, once their end is seen, so that a
// malformed or truncated call can still come back as content.
//
// Grammar writes the GBNF of a format's calls from the tools' JSON
// schemas (Calls.SchemaGBNF: model/grammar's converter, which the server
// passes from the runtime), for tool_choice "required" or a
// named function: output under it always parses.
//
// Concurrency: a Parser is read-only after construction and safe to share;
// a Stream belongs to one goroutine.
package toolcall
