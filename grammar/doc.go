// Package grammar constrains decoding to a formal language: a grammar in
// llama.cpp's GBNF, or one built from a JSON Schema, a regular expression or
// a list of choices, masks the tokens a model may sample next.
//
// A program that composes a grammar (the tool-call grammar of several
// schemas) builds it with a Builder: expressions (Lit, Class, Seq, Alt, Opt,
// Star, Repeat, List, TextWithout), rules referenced by the Expr that
// defines them under a unique name (Rule; Declare and Define for
// recursion), and JSON Schemas converted into the same rule set
// (Builder.Schema). GBNF text is an input (Compile) and the built
// grammar's source (Builder.GBNF), never re-parsed to be composed.
//
// A Grammar is compiled once (Compile, FromJSONSchema, FromRegex,
// FromChoices, JSONObject) and is vocabulary-independent. Each sequence owns a
// Matcher (g.NewMatcher(v)) over a Vocab (NewVocab: the token pieces as bytes
// and the end-of-generation ids). Before sampling, Matcher.Mask writes the
// allowed tokens as a bitset; after sampling, Matcher.Accept advances it.
//
// The matcher works on bytes, as llama.cpp's llama-grammar works on code
// points: a set of pushdown stacks of grammar positions, each stack's top a
// byte class (character classes are lowered to their UTF-8 byte sequences,
// so tokens that split a character work). Stack sets are interned and their
// transitions on each byte memoized, so a grammar grows a lazy DFA shared by
// all its matchers; masks are computed by one walk of the vocabulary's token
// trie per stack set (a dead prefix prunes its subtree) and cached per set.
//
// Concurrency: a Grammar and a Vocab are safe for concurrent use (the shared
// automaton is behind a mutex). A Matcher belongs to one goroutine.
//
// Limits: sources, rule sizes, repetition counts, nesting, stacks per state,
// automaton states and bytes are bounded; a grammar past them is an error
// (ErrTooComplex), never a hang. A JSON Schema is converted under a
// Converter's work budget (schema nodes visited, rule bytes built; each
// node converted once), and a character class is lowered once however
// often it is repeated. CompileContext and a Converter stop when their
// context ends. Left recursion that would grow the stacks
// (a ::= a "x") is refused, as in llama.cpp; cycles that come back to the
// same stack (( [x]* )*) are cut, as llama.cpp's seen set does. A Cache
// of compiled grammars bounds their number and their memory
// (Grammar.Bytes: compiled rules, automaton and masks), keys included.
package grammar
