// Package chat turns an OpenAI chat request's messages into a prompt with the
// model's Jinja chat template, rendering exactly as Hugging Face
// transformers' apply_chat_template does with Python's jinja2 (and so as
// vLLM does): the same bytes for the same messages, and an error where
// Python raises one.
//
// Templates are parsed by github.com/nikolalohinski/gonja/v2, whose parser
// follows jinja2 but whose evaluator uses Go's types. The package
//   - fixes the few places where gonja reads the source otherwise
//     (source.go: string escapes, lstrip_blocks after a tag; cond.go:
//     conditional expressions nested in parentheses or arguments);
//   - rewrites the parsed tree so that attribute and item access, operators,
//     literals and printing go through Python's semantics (rewrite.go), on
//     values that behave as Python's None, Undefined, str, list, tuple and
//     insertion-ordered dict (values.go);
//   - replaces gonja's filters, tests and methods where they differ from
//     jinja2's and Python's, and adds transformers' tojson
//     (json.dumps(ensure_ascii=False)), raise_exception and strftime_now.
//
// testdata/golden.json holds Python's renderings of every template in
// ../shared/models/templates on a set of conversations, and of small
// templates exercising one construct each; scripts/chat-template-golden.py
// made it, and the tests compare byte for byte.
//
// Known differences from jinja2: a chained comparison (a < b < c) is
// evaluated as (a < b) < c, since gonja's tree cannot tell them apart;
// str.format takes no format specs; {% with %}, {% call %}, {% include %},
// {% import %}, {% extends %} and {% block %} are not supported (Parse
// fails), nor is {% set a, b = … %}.
//
// Concurrency: a *Template is immutable after Parse; Render may be called
// from any number of goroutines.
package chat
