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
// schemas, composed with grammar's Builder (the schemas converted
// by the runtime's Converter: GrammarBuild is the function the server
// hands Runtime.BuildGrammar), for tool_choice "required" or a named
// function: output under it always parses.
//
// Each format is one value of type format in a file of its own
// (format_NAME.go), registered in formats by its init: its names, the
// markers by which Detect knows its chat templates, its control-token
// markers, its output's blocks and their parse hooks, its reasoning pair,
// the syntax of its calls for Grammar, and its template hooks. The server
// asks the Format (Markers, ReasoningMarker, TemplateVariables,
// HidesContentBesideReasonedCalls, WrapsAnswer) and never compares names.
//
// Adding a format: a Format constant in format.go; format_NAME.go with its
// value (name, aliases, detect and its rank among the others, markers,
// blocks, think pair, calls); its chat template among the shared models'
// templates with a row in templateFormats (TestDetectTemplates), output
// fixtures in fixtures_test.go (TestParseFixtures,
// TestStreamSplits); with calls set, TestGrammarParses and
// TestGrammarEndsAfterCall sample its grammar (a format whose parameters
// are written apart, XML tags or Python calls, joins xmlShapes in
// grammar_test.go); its name in README.md's list of formats.
//
// Concurrency: a Parser is read-only after construction and safe to share;
// a Stream belongs to one goroutine.
package toolcall
